package pool

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func pressurePool(t *testing.T, cfg Config, cn *connector, p99 time.Duration) *Pool[*fakeConn] {
	t.Helper()
	p := New(Options[*fakeConn]{Config: cfg, Connect: cn.connect, Jitter: func() float64 { return 1 },
		XactP99: func() time.Duration { return p99 }})
	t.Cleanup(p.Close)
	return p
}

func TestWarmZoneConnectsAtOnce(t *testing.T) {
	cn := &connector{}
	// pool_size 10, warm ratio 50 %: the first 5 connections are made
	// without anticipation even while others are checked out.
	p := pressurePool(t, Config{MaxSize: 10, MaxParallelCreates: 10, WarmRatio: 50}, cn, time.Hour)
	var held []*Conn[*fakeConn]
	for i := 0; i < 5; i++ {
		c, err := p.Acquire(context.Background())
		require.NoError(t, err)
		held = append(held, c)
	}
	s := p.Stats()
	require.EqualValues(t, 5, s.CreatesStarted)
	require.EqualValues(t, 0, s.Waits, "no anticipation below the warm threshold")
	for _, c := range held {
		p.Release(c)
	}
}

func TestAnticipationTakesAReturnedConnection(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 10, MaxParallelCreates: 2, WarmRatio: 10}, cn, time.Hour)
	held, err := p.Acquire(context.Background()) // warm: created at once
	require.NoError(t, err)
	got := make(chan *Conn[*fakeConn], 1)
	go func() {
		c, err := p.Acquire(context.Background())
		require.NoError(t, err)
		got <- c
	}()
	waitFor(t, func() bool { return p.Stats().Waiting == 1 })
	require.Equal(t, 1, cn.n, "above the warm threshold the client waits instead of connecting")
	p.Release(held)
	c := <-got
	require.Same(t, held, c, "it got the returned connection")
	s := p.Stats()
	require.EqualValues(t, 1, s.AnticipationNotify)
	require.EqualValues(t, 0, s.AnticipationTimeout)
	p.Release(c)
}

func TestAnticipationTimesOutThenConnects(t *testing.T) {
	cn := &connector{}
	// p99 = 5 ms: the anticipation deadline is 2 × p99 = 10 ms.
	p := pressurePool(t, Config{MaxSize: 10, MaxParallelCreates: 2, WarmRatio: 10}, cn, 5*time.Millisecond)
	held, err := p.Acquire(context.Background())
	require.NoError(t, err)
	defer p.Release(held)
	c, err := p.Acquire(context.Background())
	require.NoError(t, err)
	require.NotSame(t, held, c)
	s := p.Stats()
	require.EqualValues(t, 1, s.AnticipationTimeout)
	require.EqualValues(t, 1, s.CreateFallback)
	require.Equal(t, 2, cn.n)
	p.Release(c)
}

func TestAnticipationRespectsCallerDeadline(t *testing.T) {
	p := &Pool[*fakeConn]{now: time.Now, jitter: func() float64 { return 1 }, xactP99: func() time.Duration { return 0 }}
	d := p.anticipation(time.Now().Add(700 * time.Millisecond))
	require.LessOrEqual(t, d, 200*time.Millisecond, "leaves 500 ms of the wait for the connect path")
	require.Greater(t, d, 100*time.Millisecond)
	require.InDelta(t, float64(400*time.Millisecond), float64(p.anticipation(time.Time{})), float64(time.Millisecond), "cap in the middle of 300-500 ms at jitter 1")
	require.Equal(t, gateBudgetMin, p.gateBudget())
	p.xactP99 = func() time.Duration { return time.Second }
	require.Equal(t, gateBudgetMax, p.gateBudget())
}

func TestGateWaitsCounted(t *testing.T) {
	cn := &connector{gate: make(chan struct{})}
	p := pressurePool(t, Config{MaxSize: 10, MaxParallelCreates: 1, WarmRatio: 100}, cn, 0)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.Acquire(context.Background())
			if err == nil {
				p.Release(c)
			}
		}()
	}
	waitFor(t, func() bool { s := p.Stats(); return s.Creating == 1 && s.Waiting == 2 })
	require.EqualValues(t, 2, p.Stats().GateWaits)
	close(cn.gate)
	wg.Wait()
}

func TestTryCreateNoWait(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1}, cn, 0)
	c, err := p.TryCreate(context.Background())
	require.NoError(t, err, "room in the pool: connect now")
	_, err = p.TryCreate(context.Background())
	require.ErrorIs(t, err, ErrNoWait, "pool full: no waiting")
	p.Release(c)
	c2, err := p.TryCreate(context.Background())
	require.NoError(t, err)
	require.Same(t, c, c2, "idle connection first")
	p.Release(c2)
}

func TestReplenishDeferredWhenGateBusy(t *testing.T) {
	cn := &connector{gate: make(chan struct{})}
	p := pressurePool(t, Config{MaxSize: 4, MinSize: 2, MaxParallelCreates: 1, WarmRatio: 100}, cn, 0)
	go func() {
		c, err := p.Acquire(context.Background())
		if err == nil {
			p.Release(c)
		}
	}()
	waitFor(t, func() bool { return p.Stats().Creating == 1 })
	_, deferred, err := p.Replenish(context.Background())
	require.NoError(t, err)
	require.True(t, deferred)
	require.EqualValues(t, 1, p.Stats().ReplenishDeferred)
	close(cn.gate)
}

func TestPrereplacementNearLifetime(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	cn := &connector{}
	p := New(Options[*fakeConn]{Config: Config{MaxSize: 2, MaxParallelCreates: 2, Lifetime: 100 * time.Second},
		Connect: cn.connect, Now: clk.Now, Jitter: func() float64 { return 1 }})
	defer p.Close()
	c, err := p.Acquire(context.Background())
	require.NoError(t, err)
	p.Release(c)
	clk.Advance(96 * time.Second) // past 95 % of its lifetime
	c2, err := p.Acquire(context.Background())
	require.NoError(t, err)
	require.Same(t, c, c2)
	waitFor(t, func() bool { return p.Stats().Idle == 1 })
	require.EqualValues(t, 1, p.Stats().Prereplacements)
	clk.Advance(5 * time.Second)
	p.Release(c2) // past its lifetime: closed, the replacement is already idle
	require.True(t, c2.Value.closed.Load())
	s := p.Stats()
	require.Equal(t, 1, s.Idle)
	require.Equal(t, 1, s.Total)
	c3, err := p.Acquire(context.Background())
	require.NoError(t, err)
	require.NotSame(t, c, c3, "the next client gets the replacement without a connect")
	require.Equal(t, 2, cn.n)
	p.Release(c3)
}
