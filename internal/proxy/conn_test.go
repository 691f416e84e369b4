package proxy

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
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
