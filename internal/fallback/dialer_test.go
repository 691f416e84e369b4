package fallback

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/patroni"
)

func TestNilDialerConnectsLocally(t *testing.T) {
	t.Parallel()
	var d *Dialer
	n := newFakeNet()
	n.set(local.Address, succeed())
	c, res, err := d.Connect(context.Background(), local, n.connect)
	require.NoError(t, err)
	require.Equal(t, Result{Target: local}, res)
	require.Equal(t, local.Address, c.(*fakeConn).addr)
}

func TestLocalServerUsedWhenUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), nil)
	e.net.set(local.Address, succeed())
	c, res, err := e.connect(context.Background())
	require.NoError(t, err)
	require.Equal(t, Result{Target: local}, res)
	require.Equal(t, local.Address, c.(*fakeConn).addr)
	require.Zero(t, e.srv.Requests(), "no discovery while the local server works")
}

func TestLocalErrorsThatDoNotFallBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{"auth error", serverErr("28P01", `password authentication failed for user "app"`)},
		{"starting up", serverErr("57P03", "the database system is starting up")},
		{"too many clients", serverErr("53300", "sorry, too many clients already")},
		{"protocol error", errors.New("server x: unexpected message")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, threeNodes(), nil)
			e.net.set(syncAddr, succeed())
			e.net.set(local.Address, failWith(tt.err))
			_, res, err := e.connect(context.Background())
			require.ErrorIs(t, err, tt.err)
			require.Equal(t, Result{Target: local}, res)
			require.Zero(t, e.srv.Requests())
			require.Zero(t, e.net.count(syncAddr))
			require.True(t, e.d.State().LocalDownUntil.IsZero())
			// the next connect tries the local server again
			_, _, _ = e.connect(context.Background())
			require.Equal(t, 2, e.net.count(local.Address))
		})
	}
}

func TestCancelledCallerDoesNotFallBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	e.net.set(local.Address, func(context.Context, string) (Conn, error) {
		cancel() // the client went away while we were connecting
		return nil, &backend.ConnectError{Addr: local.Address, Err: context.Canceled}
	})
	_, _, err := e.connect(ctx)
	require.Error(t, err)
	require.Zero(t, e.srv.Requests())
	require.True(t, e.d.State().LocalDownUntil.IsZero())
}

func TestFallbackWhenLocalDown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{"refused", refused(local.Address)},
		{"shutting down", serverErr("57P03", "the database system is shutting down")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, threeNodes(), func(o *Options) { o.Lifetime = 20 * time.Second })
			e.net.set(local.Address, failWith(tt.err))
			e.net.set(syncAddr, succeed())
			res := e.mustFallback(t, syncAddr)
			require.Equal(t, Result{Target: Target{"tcp", syncAddr}, Fallback: true, Lifetime: 20 * time.Second,
				Member: "node3", Role: patroni.RoleSyncStandby}, res)
			require.Equal(t, State{LocalDownUntil: t0.Add(30 * time.Second), Host: Target{"tcp", syncAddr}}, e.d.State())
			require.Equal(t, []string{"warn local server unavailable, using patroni fallback"}, e.messages("local server"))
		})
	}
}

func TestWavePriority(t *testing.T) {
	t.Parallel()
	t.Run("a slow sync standby beats ready replicas", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, threeNodes(), nil)
		e.net.set(syncAddr, after(50*time.Millisecond, succeed()))
		e.net.set(replicaAddr, succeed())
		e.net.set(leaderAddr, succeed())
		e.mustFallback(t, syncAddr)
		require.Zero(t, e.net.count(replicaAddr), "wave 2 must not start while a sync standby is starting")
		require.Zero(t, e.net.count(leaderAddr))
	})
	t.Run("wave 2 after every sync standby failed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, threeNodes(), nil)
		e.net.set(syncAddr, failWith(serverErr("57P03", "the database system is starting up")))
		e.net.set(replicaAddr, after(20*time.Millisecond, succeed()))
		e.net.set(leaderAddr, hang())
		res := e.mustFallback(t, replicaAddr)
		require.Equal(t, patroni.RoleReplica, res.Role)
		require.Equal(t, 1, e.net.count(leaderAddr), "the leader was started in the same wave")
	})
	t.Run("no sync standby: straight to wave 2", func(t *testing.T) {
		t.Parallel()
		cl := threeNodes()
		cl.Members = cl.Members[:2]
		e := newEnv(t, cl, nil)
		e.net.set(leaderAddr, succeed())
		e.mustFallback(t, leaderAddr)
	})
}

// barrier makes every candidate wait until n of them have started, so a
// wave that started them one by one would time out instead of succeeding.
type barrier struct {
	n       int32
	started atomic.Int32
	all     chan struct{}
}

func newBarrier(n int32) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) then(next behavior) behavior {
	return func(ctx context.Context, addr string) (Conn, error) {
		if b.started.Add(1) == b.n {
			close(b.all)
		}
		select {
		case <-b.all:
			return next(ctx, addr)
		case <-ctx.Done():
			return nil, &backend.ConnectError{Addr: addr, Err: ctx.Err()}
		}
	}
}

func TestWavesStartCandidatesConcurrently(t *testing.T) {
	t.Parallel()
	t.Run("wave 1", func(t *testing.T) {
		t.Parallel()
		cl := threeNodes()
		cl.Members = append(cl.Members,
			member("node4", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.0.4", 5432, nil),
			member("node5", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.0.5", 5432, nil))
		e := newEnv(t, cl, func(o *Options) { o.ConnectTimeout = 3 * time.Second })
		b := newBarrier(3)
		late := make(chan struct{})
		e.net.set(syncAddr, b.then(succeed()))
		e.net.set("10.0.0.4:5432", b.then(hang()))
		// ignores cancellation and succeeds after the race is over
		e.net.set("10.0.0.5:5432", b.then(func(ctx context.Context, addr string) (Conn, error) {
			<-ctx.Done()
			<-late
			return &fakeConn{addr: addr}, nil
		}))
		e.mustFallback(t, syncAddr)
		close(late)
		e.d.Close() // waits for the drain
		require.Zero(t, e.net.count(replicaAddr))
		e.net.mu.Lock()
		defer e.net.mu.Unlock()
		require.Len(t, e.net.conns, 2)
		for _, c := range e.net.conns {
			require.Equal(t, c.addr == "10.0.0.5:5432", c.closed.Load(), c.addr)
		}
	})
	t.Run("wave 2", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, threeNodes(), func(o *Options) { o.ConnectTimeout = 3 * time.Second })
		b := newBarrier(2)
		e.net.set(syncAddr, refuse())
		e.net.set(replicaAddr, b.then(hang()))
		e.net.set(leaderAddr, b.then(succeed()))
		e.mustFallback(t, leaderAddr)
	})
}

func TestAllCandidatesRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), func(o *Options) { o.ConnectTimeout = 100 * time.Millisecond })
	e.net.set(syncAddr, failWith(serverErr("28P01", "password authentication failed")))
	e.net.set(replicaAddr, hang())
	e.net.set(leaderAddr, refuse())
	_, _, err := e.connect(context.Background())
	const want = "all fallback candidates rejected (1 startup_error, 1 connect_error, 1 timeout)"
	require.EqualError(t, err, want)
	var rej *RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, 3, rej.Total())
	require.Equal(t, []string{"warn " + want}, e.messages("all fallback"))
	require.Len(t, e.messages(replicaAddr+" rejected (timeout: "), 1)

	// every candidate is in its cooldown now: the next round has none
	_, _, err = e.connect(context.Background())
	require.ErrorIs(t, err, ErrNoCandidates)
	require.Equal(t, 1, e.net.count(syncAddr))
	require.Equal(t, int64(2), e.srv.Requests())
}

func TestOuterDeadline(t *testing.T) {
	t.Parallel()
	t.Run("query_wait_timeout", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, threeNodes(), func(o *Options) { o.OuterTimeout = 100 * time.Millisecond })
		e.net.set(syncAddr, hang())
		start := time.Now()
		_, _, err := e.connect(context.Background())
		require.Less(t, time.Since(start), 2*time.Second)
		require.EqualError(t, err, "fallback: outer deadline 100ms exceeded")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var de *DeadlineError
		require.ErrorAs(t, err, &de)
		require.Equal(t, []string{"warn fallback: outer deadline 100ms exceeded"}, e.messages("fallback: outer"))
		require.Empty(t, e.messages(syncAddr+" rejected"), "the candidate did not fail: the client stopped waiting")
		// so it is not in a cooldown
		e.net.set(syncAddr, succeed())
		e.mustFallback(t, syncAddr)
	})
	t.Run("caller deadline while patroni hangs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, threeNodes(), nil)
		e.srv.SetDelay(time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, _, err := e.connect(ctx)
		require.Regexp(t, regexp.MustCompile(`^fallback: outer deadline 1[0-5]\dms exceeded$`), err.Error())
	})
}

func TestCachedHostAndSingleRediscovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), nil)
	e.net.set(syncAddr, succeed())
	e.net.set(leaderAddr, hang())
	require.False(t, e.mustFallback(t, syncAddr).CacheHit)
	require.Equal(t, int64(1), e.srv.Requests())

	e.clock.Advance(10 * time.Second)
	res := e.mustFallback(t, syncAddr)
	require.True(t, res.CacheHit)
	require.Equal(t, 1, e.net.count(local.Address), "local server not tried during its cooldown")
	require.Equal(t, int64(1), e.srv.Requests(), "no patroni request on a cache hit")

	// the cached host fails: one rediscovery finds another member
	e.net.set(syncAddr, refuse())
	e.net.set(replicaAddr, succeed())
	res = e.mustFallback(t, replicaAddr)
	require.False(t, res.CacheHit)
	require.Equal(t, int64(2), e.srv.Requests())
	require.Equal(t, 3, e.net.count(syncAddr), "sync is cooling down, not retried in the rediscovery")

	// cached host and everything else fail: exactly one rediscovery
	e.net.set(replicaAddr, refuse())
	e.net.set(leaderAddr, refuse())
	_, _, err := e.connect(context.Background())
	require.EqualError(t, err, "all fallback candidates rejected (1 connect_error)")
	require.Equal(t, int64(3), e.srv.Requests())
	require.Equal(t, 2, e.net.count(replicaAddr), "the cached replica is in its cooldown for the rediscovery")
}

func TestLocalTriedAgainAfterCooldown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), nil)
	e.net.set(syncAddr, succeed())
	e.mustFallback(t, syncAddr)

	e.clock.Advance(30*time.Second - time.Millisecond)
	e.mustFallback(t, syncAddr)
	require.Equal(t, 1, e.net.count(local.Address))

	// still down when the cooldown ends: a new cooldown and a fresh discovery
	e.clock.Advance(time.Millisecond)
	e.mustFallback(t, syncAddr)
	require.Equal(t, 2, e.net.count(local.Address))
	require.Equal(t, int64(2), e.srv.Requests(), "the cache ended with the cooldown")
	require.Equal(t, t0.Add(60*time.Second), e.d.State().LocalDownUntil)

	// back after the second cooldown
	e.net.set(local.Address, succeed())
	e.clock.Advance(30 * time.Second)
	_, res, err := e.connect(context.Background())
	require.NoError(t, err)
	require.Equal(t, Result{Target: local, LocalRestored: true}, res)
	require.Equal(t, State{}, e.d.State())
	_, res, err = e.connect(context.Background())
	require.NoError(t, err)
	require.False(t, res.LocalRestored)
}

func TestFallbackLifetimeEndsWithCooldown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		lifetime time.Duration // fallback_lifetime; 0 = the cooldown (30s)
		at       time.Duration // when the connection is opened, after the local server went down
		want     time.Duration
	}{
		{"at the start, default lifetime", 0, 0, 30 * time.Second},
		{"at the start, shorter lifetime", 10 * time.Second, 0, 10 * time.Second},
		{"at the start, longer lifetime", time.Minute, 0, 30 * time.Second},
		{"mid-cooldown, shorter lifetime", 10 * time.Second, 15 * time.Second, 10 * time.Second},
		{"pre-replacement at 95 %", 0, 28500 * time.Millisecond, 1500 * time.Millisecond},
		{"last moment: at least MinLifetime", 0, 30*time.Second - time.Millisecond, MinLifetime},
		{"lifetime below MinLifetime", 500 * time.Millisecond, 29900 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, threeNodes(), func(o *Options) { o.Lifetime = tt.lifetime })
			e.net.set(syncAddr, succeed())
			e.mustFallback(t, syncAddr) // the local server is marked down at t0
			e.clock.Advance(tt.at)
			res := e.mustFallback(t, syncAddr)
			require.True(t, res.CacheHit)
			require.Equal(t, tt.want, res.Lifetime)
		})
	}
}

func TestHostCooldownDoublesUpToCap(t *testing.T) {
	t.Parallel()
	cl := &patroni.Cluster{Members: []patroni.Member{
		member("node3", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.0.3", 5432, nil),
	}}
	e := newEnv(t, cl, func(o *Options) { o.ConnectTimeout = time.Second })
	e.net.set(syncAddr, refuse())
	calls := 0
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 32, 60, 60} {
		_, _, err := e.connect(context.Background())
		require.EqualError(t, err, "all fallback candidates rejected (1 connect_error)", "round %d", i)
		calls++
		require.Equal(t, calls, e.net.count(syncAddr))

		e.clock.Advance(want*time.Second - time.Millisecond)
		_, _, err = e.connect(context.Background())
		require.ErrorIs(t, err, ErrNoCandidates, "round %d: still cooling down", i)
		require.Equal(t, calls, e.net.count(syncAddr))
		e.clock.Advance(time.Millisecond)
	}
	// a success resets the streak
	e.net.set(syncAddr, succeed())
	e.mustFallback(t, syncAddr)
	e.clock.Advance(31 * time.Second) // local cooldown over: cache gone
	e.net.set(syncAddr, refuse())
	_, _, _ = e.connect(context.Background())
	e.clock.Advance(time.Second)
	e.net.set(syncAddr, succeed())
	e.mustFallback(t, syncAddr) // 1 s, the base, was enough
}

func TestRejectedWarnRateLimited(t *testing.T) {
	t.Parallel()
	cl := &patroni.Cluster{Members: []patroni.Member{
		member("node3", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.0.3", 5432, nil),
	}}
	e := newEnv(t, cl, nil) // base host cooldown 5 s
	e.net.set(syncAddr, refuse())
	for _, step := range []time.Duration{0, 5 * time.Second, 10 * time.Second} { // t0, t0+5s, t0+15s
		e.clock.Advance(step)
		_, _, err := e.connect(context.Background())
		require.Error(t, err)
	}
	got := e.messages(syncAddr + " rejected (connect_error: ")
	require.Len(t, got, 3)
	for i, level := range []string{"warn", "debug", "warn"} {
		require.Regexp(t, "^"+level+" ", got[i], "line %d", i)
	}
	require.InDelta(t, 3, counterValue(t, e.metrics.failures, "db", "connect_error"), 0)
}

func TestDiscoveryCoalesced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), nil)
	e.net.set(syncAddr, succeed())
	release := make(chan struct{})
	e.srv.SetHook(func(int64, *http.Request) { <-release })
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, _, err := e.connect(context.Background())
			errs <- err
		})
	}
	require.Eventually(t, func() bool { return e.d.fetchWaits.Load() == n }, 5*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), e.srv.Requests())
	require.InDelta(t, 1, counterValue(t, e.metrics.apiRequests, "db"), 0)
}

func TestDiscoveryFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), nil)
	e.srv.SetStatus(500)
	_, _, err := e.connect(context.Background())
	require.ErrorContains(t, err, "fallback discovery: fetch patroni cluster")
	require.Len(t, e.messages("fallback discovery failed"), 1)
}

func TestNoEligibleMember(t *testing.T) {
	t.Parallel()
	cl := &patroni.Cluster{Members: []patroni.Member{
		member("node2", patroni.RoleReplica, patroni.StateStreaming, "10.0.0.2", 5432, map[string]any{"nofailover": true}),
		member("node3", patroni.RoleSyncStandby, patroni.StateStarting, "10.0.0.3", 5432, nil),
	}}
	e := newEnv(t, cl, nil)
	_, _, err := e.connect(context.Background())
	require.ErrorIs(t, err, ErrNoCandidates)
	require.EqualError(t, err, fmt.Sprintf("%v (2 members)", ErrNoCandidates))
}
