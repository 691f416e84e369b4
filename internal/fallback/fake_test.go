package fallback

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
)

// fakeConn is a server connection that only knows whether it was closed.
type fakeConn struct {
	addr   string
	closed atomic.Bool
}

func (c *fakeConn) Close() error { c.closed.Store(true); return nil }

// behavior is what connecting to one address does.
type behavior func(ctx context.Context, addr string) (Conn, error)

func succeed() behavior {
	return func(_ context.Context, addr string) (Conn, error) { return &fakeConn{addr: addr}, nil }
}

func failWith(err error) behavior {
	return func(context.Context, string) (Conn, error) { return nil, err }
}

func refuse() behavior {
	return func(_ context.Context, addr string) (Conn, error) { return nil, refused(addr) }
}

// hang waits for ctx like backend.Connect does.
func hang() behavior {
	return func(ctx context.Context, addr string) (Conn, error) {
		<-ctx.Done()
		return nil, &backend.ConnectError{Addr: addr, Err: ctx.Err()}
	}
}

// after waits d (or ctx) and then behaves as b.
func after(d time.Duration, b behavior) behavior {
	return func(ctx context.Context, addr string) (Conn, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return b(ctx, addr)
		case <-ctx.Done():
			return nil, &backend.ConnectError{Addr: addr, Err: ctx.Err()}
		}
	}
}

// fakeNet routes connects by address; unknown addresses are refused.
type fakeNet struct {
	mu        sync.Mutex
	behaviors map[string]behavior
	calls     map[string]int
	conns     []*fakeConn
}

func newFakeNet() *fakeNet {
	return &fakeNet{behaviors: map[string]behavior{}, calls: map[string]int{}}
}

func (n *fakeNet) set(addr string, b behavior) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.behaviors[addr] = b
}

func (n *fakeNet) count(addr string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[addr]
}

func (n *fakeNet) connect(ctx context.Context, t Target) (Conn, error) {
	n.mu.Lock()
	n.calls[t.Address]++
	b := n.behaviors[t.Address]
	n.mu.Unlock()
	if b == nil {
		b = refuse()
	}
	c, err := b(ctx, t.Address)
	if fc, ok := c.(*fakeConn); ok {
		n.mu.Lock()
		n.conns = append(n.conns, fc)
		n.mu.Unlock()
	}
	return c, err
}

const (
	leaderAddr  = "10.0.0.1:5432"
	replicaAddr = "10.0.0.2:5432"
	syncAddr    = "10.0.0.3:5432"
)

var (
	t0    = time.Date(2026, 4, 24, 12, 0, 0, 0, time.UTC)
	local = Target{Network: "unix", Address: "/run/postgresql/.s.PGSQL.5432"}
)

// threeNodes is a healthy cluster of leader, replica and sync standby.
func threeNodes() *patroni.Cluster {
	return &patroni.Cluster{Members: []patroni.Member{
		member("node1", patroni.RoleLeader, patroni.StateRunning, "10.0.0.1", 5432, nil),
		member("node2", patroni.RoleReplica, patroni.StateStreaming, "10.0.0.2", 5432, nil),
		member("node3", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.0.3", 5432, nil),
	}}
}

type env struct {
	srv     *patronitest.Server
	clock   *patronitest.ManualClock
	net     *fakeNet
	d       *Dialer
	logs    *observer.ObservedLogs
	metrics *PromMetrics
}

// newEnv starts a fake Patroni answering cl and a Dialer for pool "db"
// whose local server refuses connections.
func newEnv(t *testing.T, cl *patroni.Cluster, mod func(*Options)) *env {
	t.Helper()
	e := &env{srv: patronitest.NewServer(t, nil), clock: patronitest.NewManualClock(t0), net: newFakeNet()}
	e.srv.SetCluster(t, cl)
	core, logs := observer.New(zap.DebugLevel)
	e.logs = logs
	e.metrics = NewMetrics(prometheus.NewRegistry())
	opts := Options{
		PoolName: "db", PatroniURLs: []string{e.srv.URL()},
		Cooldown: 30 * time.Second, APITimeout: 2 * time.Second, ConnectTimeout: 5 * time.Second,
		Clock: e.clock, Log: zap.New(core), Metrics: e.metrics,
	}
	if mod != nil {
		mod(&opts)
	}
	d, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	e.d = d
	e.net.set(local.Address, refuse())
	return e
}

func (e *env) connect(ctx context.Context) (Conn, Result, error) {
	return e.d.Connect(ctx, local, e.net.connect)
}

// mustFallback connects and requires a fallback connection to addr.
func (e *env) mustFallback(t *testing.T, addr string) Result {
	t.Helper()
	c, res, err := e.connect(context.Background())
	require.NoError(t, err)
	require.True(t, res.Fallback)
	require.Equal(t, Target{Network: "tcp", Address: addr}, res.Target)
	require.Equal(t, addr, c.(*fakeConn).addr)
	return res
}

// messages returns the logged messages with the given prefix, with levels.
func (e *env) messages(prefix string) []string {
	var out []string
	for _, l := range e.logs.All() {
		if len(l.Message) >= len(prefix) && l.Message[:len(prefix)] == prefix {
			out = append(out, l.Level.String()+" "+l.Message)
		}
	}
	return out
}
