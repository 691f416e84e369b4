package proxy

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/relay"
)

// TestRelayedConnCuts: a backend's cut reaches its connections on the relay
// whichever way it falls against attach and Add: a connection attached and
// cut before its pair exists is cut when the pair is recorded; a backend
// cut before attach refuses it; a connection that ends leaves the set.
func TestRelayedConnCuts(t *testing.T) {
	rl, err := relay.New(1)
	require.NoError(t, err)
	t.Cleanup(rl.Close)
	newPair := func() *relay.Pair {
		_, proxyIn := tcpPair(t)
		proxyOut, _ := tcpPair(t)
		p, err := rl.Add(proxyIn, proxyOut, nil)
		require.NoError(t, err)
		return p
	}
	s := &portState{}
	plan := Plan{Eligible: []Target{{Addr: "a:1"}, {Addr: "b:1"}}, Keep: map[string]bool{"a:1": true, "b:1": true}}
	s.apply(plan, time.Now())
	a, _ := s.pick(time.Now(), time.Hour, nil)
	require.NotNil(t, a)
	s.mu.Lock()
	a.active++ // a second connection to a, as pick would count it
	s.mu.Unlock()

	early := &conn{b: a}
	require.True(t, s.attach(early))
	running := &conn{b: a}
	require.True(t, s.attach(running))
	rp := newPair()
	s.setPair(running, rp)

	// a leaves the topology: both are cut, the one without a pair yet
	// when it gets one.
	s.apply(Plan{Eligible: []Target{{Addr: "b:1"}}, Keep: map[string]bool{"b:1": true}}, time.Now())
	select {
	case <-rp.Done():
	case <-time.After(waitFor):
		t.Fatal("the running connection was not cut")
	}
	ep := newPair()
	s.setPair(early, ep)
	select {
	case <-ep.Done():
	case <-time.After(waitFor):
		t.Fatal("the connection cut before its pair existed was not cut")
	}
	require.True(t, s.detach(early))
	require.True(t, s.detach(running))
	require.Empty(t, a.conns)
	require.Zero(t, a.active, "both connections uncounted")

	require.False(t, s.attach(&conn{b: a}), "a cut backend takes no connection")

	b, _ := s.pick(time.Now(), time.Hour, nil)
	require.NotNil(t, b)
	require.Equal(t, "b:1", b.addr)
	ok := &conn{b: b}
	require.True(t, s.attach(ok))
	require.False(t, s.detach(ok), "not cut")
	require.Empty(t, b.conns)
}

// TestRelayedConnHasNoGoroutine: connections forwarded on the relay cost
// the proxy no goroutine each (the echo backend, in the same process, has
// one per connection). Not parallel: it counts the process's goroutines.
func TestRelayedConnHasNoGoroutine(t *testing.T) {
	e := newEcho(t, "e")
	h := newHarness(t, ports("master", roles(leader)), e.member(patroni.RoleLeader))
	connect(t, h.addr("master")).alive()
	h.backendCounts("master", 1)
	before := runtime.NumGoroutine()
	const n = 50
	for range n {
		connect(t, h.addr("master")).alive()
	}
	h.backendCounts("master", n+1)
	require.Less(t, runtime.NumGoroutine()-before, n+n/2,
		"%d connections: the echo backend's %d goroutines and no proxy goroutine per connection", n, n)
}

// TestHostileClientsLeaveNothing: clients that reset at once, reset in the
// middle of a large write, send and vanish, or never read a large answer
// (then reset) leave no connection counted, no server connection open (the
// relay closes both sockets of a pair together, and only then reports the
// end) and no damage to a client that keeps talking.
func TestHostileClientsLeaveNothing(t *testing.T) {
	t.Parallel()
	e := newEcho(t, "e")
	h := newHarness(t, ports("master", roles(leader)), e.member(patroni.RoleLeader))
	good := connect(t, h.addr("master"))
	good.alive()
	h.backendCounts("master", 1)
	reset := func(c net.Conn) {
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.Close())
	}
	var wg sync.WaitGroup
	for i := range 60 {
		c := connect(t, h.addr("master"))
		switch i % 4 {
		case 0: // reset at once
			reset(c.conn)
		case 1: // reset in the middle of a large write
			wg.Go(func() { _, _ = c.conn.Write(make([]byte, 4<<20)) })
			reset(c.conn)
		case 2: // send and close without waiting
			_, _ = c.conn.Write([]byte("garbage\x00\xff\n"))
			require.NoError(t, c.conn.Close())
		case 3: // ask for a large echo, never read it, then reset
			wg.Go(func() { _, _ = c.conn.Write(make([]byte, 1<<20)) })
			require.Eventually(t, func() bool { return e.active.Load() > 1 }, waitFor, time.Millisecond)
			reset(c.conn)
		}
		good.alive()
	}
	wg.Wait()
	h.backendCounts("master", 1)
	require.Eventually(t, func() bool { return e.active.Load() == 1 }, waitFor, time.Millisecond,
		"server connections left open: %d", e.active.Load())
	good.alive()
}

// TestLoopFailureCountedLoggedOnce: when an event loop fails, every
// connection it ends is counted in relay_errors_total, but the error line
// comes once a second per port, with how many connections it stands for;
// an end for any other reason is neither counted nor logged.
func TestLoopFailureCountedLoggedOnce(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	clock := patronitest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	e := &env{log: zap.New(core), metrics: NewMetrics(prometheus.NewRegistry()), clock: clock}
	spec := PortSpec{Cluster: "c", Name: "master"}
	p := &port{env: e, spec: spec, refusals: map[Reason]*logLimit{}}
	gauge := e.metrics.Connections.WithLabelValues("c", "master", "a:1")
	b := newBackend(Target{Addr: "a:1"})
	end := func(err error) {
		c := &conn{port: p, spec: spec, b: b, gauge: gauge}
		b.active++
		require.True(t, p.state.attach(c))
		gauge.Inc()
		p.conns.Add(1)
		c.Ended(err)
	}
	failed := fmt.Errorf("relay loop 0: %w", relay.ErrLoopFailed)
	for range 500 {
		end(failed)
	}
	end(nil)
	end(errors.New("read: connection reset by peer"))

	require.Equal(t, 500.0, testutil.ToFloat64(e.metrics.RelayErrors.WithLabelValues("c", "master")))
	require.Equal(t, 1, logs.Len(), "one line for the burst")
	require.Equal(t, int64(1), logs.All()[0].ContextMap()["closed_since_last_line"])
	require.Zero(t, b.active)
	require.Zero(t, testutil.ToFloat64(gauge))

	// A second later the next one is logged and stands for those held back.
	clock.Advance(time.Second)
	end(failed)
	require.Equal(t, 2, logs.Len())
	require.Equal(t, int64(500), logs.All()[1].ContextMap()["closed_since_last_line"], "499 held back and this one")
}
