package coordinator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/coordinator"
)

func TestPhaseATakesMainUntilFull(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 3})
	u, _ := e.user("app", 0)
	for i := range 3 {
		p, err := u.Acquire(context.Background())
		require.NoError(t, err)
		require.Equal(t, coordinator.PhaseA, p.Phase())
		require.False(t, p.Reserve())
		require.Equal(t, i+1, e.c.Snapshot().Current)
	}
	_, ok := u.TryAcquire()
	require.False(t, ok, "TryAcquire never uses more than main")
	require.Equal(t, coordinator.Counters{}, e.c.Snapshot().Counters)
}

func TestTryAcquireNeverTakesReserve(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolSize: 5})
	u, _ := e.user("app", 0)
	p, ok := u.TryAcquire()
	require.True(t, ok)
	require.Equal(t, coordinator.PhaseA, p.Phase())
	_, ok = u.TryAcquire()
	require.False(t, ok)
	require.Equal(t, 0, e.c.Snapshot().ReserveUsed)
	p.Release()
	require.Equal(t, 0, e.c.Snapshot().Current)
}

func TestPhaseRReserveFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolSize: 2,
		ReservePoolTimeout: time.Hour, MinConnectionLifetime: time.Second})
	u, m := e.user("app", 0)
	other, om := e.user("other", 0)
	e.hold(other, om, true)
	e.clk.Advance(time.Minute) // the idle neighbour is evictable...
	for i := range 2 {
		p, err := u.Acquire(context.Background())
		require.NoError(t, err)
		require.Equal(t, coordinator.PhaseR, p.Phase(), "...but reserve comes first")
		require.True(t, p.Reserve())
		m.Add(p, false)
		s := e.c.Snapshot()
		require.Equal(t, i+1, s.ReserveUsed)
		require.Equal(t, uint64(i+1), s.ReserveAcquisitions)
		require.Equal(t, i+2, s.Current)
	}
	require.Zero(t, om.EvictCalls())
	require.Zero(t, e.c.Snapshot().Evictions)
}

func TestPhaseBEvictsIdleNeighbour(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 2, MinConnectionLifetime: 30 * time.Second,
		MinGuaranteedPoolSize: 1})
	busy, _ := e.user("busy", 0)
	idle, im := e.user("idle", 0)
	e.hold(idle, im, true)
	e.hold(idle, im, true)
	e.clk.Advance(31 * time.Second)
	p, err := busy.Acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, coordinator.PhaseB, p.Phase())
	require.False(t, p.Reserve())
	s := e.c.Snapshot()
	require.Equal(t, uint64(1), s.Evictions)
	require.Equal(t, 2, s.Current)
	require.Equal(t, 1, im.Load().Total)
	require.Equal(t, []int{1}, im.Floors(), "the floor passed is the effective minimum")
}

func TestPhaseEWhenNothingHelps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     coordinator.Config
		minPool int // of the neighbour
		age     time.Duration
		want    string
	}{
		{
			name: "neighbour too young, no reserve",
			cfg:  coordinator.Config{MaxDBConnections: 1, MinConnectionLifetime: 30 * time.Second},
			age:  29 * time.Second,
			want: "all server connections to database 'db1' are in use (max=1, user='app')",
		},
		{
			name:    "neighbour at its min_pool_size",
			cfg:     coordinator.Config{MaxDBConnections: 1, MinConnectionLifetime: time.Second},
			minPool: 1, age: time.Hour,
			want: "all server connections to database 'db1' are in use (max=1, user='app')",
		},
		{
			name: "neighbour at min_guaranteed_pool_size",
			cfg: coordinator.Config{MaxDBConnections: 1, MinConnectionLifetime: time.Second,
				MinGuaranteedPoolSize: 1},
			age:  time.Hour,
			want: "all server connections to database 'db1' are in use (max=1, user='app')",
		},
		{
			name: "reserve full",
			cfg: coordinator.Config{MaxDBConnections: 1, ReservePoolSize: 1,
				MinConnectionLifetime: time.Hour},
			want: "all server connections to database 'db1' are in use (max=1, reserve=1/1, user='app')",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Database = "db1"
			e := newEnv(t, tt.cfg) // ReservePoolTimeout 0: phase C gives up at once
			app, _ := e.user("app", 0)
			nb, nm := e.user("neighbour", tt.minPool)
			for range tt.cfg.MaxDBConnections + tt.cfg.ReservePoolSize {
				e.hold(nb, nm, true)
			}
			e.clk.Advance(tt.age)
			before := nm.Load().Total
			_, err := app.Acquire(context.Background())
			require.EqualError(t, err, tt.want)
			require.ErrorIs(t, err, coordinator.ErrExhausted)
			var ee *coordinator.ExhaustedError
			require.True(t, errors.As(err, &ee))
			require.Equal(t, "app", ee.User)
			s := e.c.Snapshot()
			require.Equal(t, uint64(1), s.Exhaustions)
			require.Zero(t, s.Evictions)
			require.Equal(t, before, nm.Load().Total, "nothing was evicted")
		})
	}
}

func TestPhaseCHandoffSkipsEviction(t *testing.T) {
	// Regression guard of the spec: a wake-up by a released permit takes the
	// cheap path and never closes a neighbour's backend.
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolTimeout: time.Hour,
		MinConnectionLifetime: time.Second})
	app, _ := e.user("app", 0)
	nb, nm := e.user("neighbour", 0)
	held := e.hold(nb, nm, false) // busy: not a donor
	ch := goAcquire(context.Background(), app)
	e.parked(1)
	calls := nm.EvictCalls()
	nm.Close(held)
	r := recv(t, ch)
	require.NoError(t, r.err)
	require.Equal(t, coordinator.PhaseC, r.p.Phase())
	require.False(t, r.p.Reserve())
	require.Equal(t, calls, nm.EvictCalls(), "no eviction attempt after a permit release")
	s := e.c.Snapshot()
	require.Equal(t, 1, s.Current)
	require.Zero(t, s.Waiting)
	require.Zero(t, s.Evictions)
}

func TestPhaseCIdleReturnTriggersEviction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolTimeout: time.Hour,
		MinConnectionLifetime: 30 * time.Second})
	app, _ := e.user("app", 0)
	nb, nm := e.user("neighbour", 0)
	conn := e.hold(nb, nm, false)
	e.clk.Advance(time.Minute)
	ch := goAcquire(context.Background(), app)
	e.parked(1)
	require.Zero(t, e.c.Snapshot().Evictions)

	nm.SetIdle(conn, true)
	nb.NotifyIdleReturn()
	r := recv(t, ch)
	require.NoError(t, r.err)
	require.Equal(t, coordinator.PhaseC, r.p.Phase())
	s := e.c.Snapshot()
	require.Equal(t, uint64(1), s.Evictions)
	require.Equal(t, 1, s.Current)
	require.Zero(t, nm.Load().Total)
}

func TestPhaseCIdleReturnOfOwnPoolDoesNotWake(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolTimeout: time.Hour})
	app, am := e.user("app", 0)
	held := e.hold(app, am, false)
	ch := goAcquire(context.Background(), app)
	e.parked(1)
	app.NotifyIdleReturn() // served by the pool's own handoff, not by us
	require.Equal(t, 1, e.c.Snapshot().Waiting)
	am.Close(held)
	require.NoError(t, recv(t, ch).err)
}

func TestPhaseCTimeoutThenE(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolTimeout: 3 * time.Second})
	app, _ := e.user("app", 0)
	nb, nm := e.user("neighbour", 0)
	e.hold(nb, nm, false)
	ch := goAcquire(context.Background(), app)
	e.parked(1)
	e.clk.Advance(2999 * time.Millisecond)
	require.Equal(t, 1, e.c.Snapshot().Waiting, "budget not spent yet")
	e.clk.Advance(time.Millisecond)
	r := recv(t, ch)
	require.ErrorIs(t, r.err, coordinator.ErrExhausted)
	s := e.c.Snapshot()
	require.Zero(t, s.Waiting)
	require.Equal(t, uint64(1), s.Exhaustions)
	require.Zero(t, e.clk.Pending(), "timer stopped or fired")
}

func TestPhaseCCancelIsNotExhaustion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolTimeout: time.Hour})
	app, _ := e.user("app", 0)
	nb, nm := e.user("neighbour", 0)
	held := e.hold(nb, nm, false)
	ctx, cancel := context.WithCancel(context.Background())
	ch := goAcquire(ctx, app)
	e.parked(1)
	cancel()
	r := recv(t, ch)
	require.ErrorIs(t, r.err, context.Canceled)
	require.NotErrorIs(t, r.err, coordinator.ErrExhausted)
	s := e.c.Snapshot()
	require.Zero(t, s.Exhaustions)
	require.Zero(t, s.Waiting)
	nm.Close(held)
	require.Zero(t, e.c.Snapshot().Current, "the slot went back to the semaphore")
	require.Zero(t, e.clk.Pending())

	_, err := app.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled, "a dead context never gets a permit")
}

func TestPhaseDReserveRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolSize: 1,
		MinConnectionLifetime: time.Hour})
	app, _ := e.user("app", 0)
	nb, nm := e.user("neighbour", 0)
	e.hold(nb, nm, true)           // main, idle but too young to evict
	burst := e.hold(nb, nm, false) // reserve
	require.True(t, burst.Permit.Reserve())
	// The reserve holder goes away while app is between phase R and D.
	nm.OnEvict(func() { nm.OnEvict(nil); nm.Close(burst) })
	p, err := app.Acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, coordinator.PhaseD, p.Phase())
	require.True(t, p.Reserve())
	s := e.c.Snapshot()
	require.Equal(t, uint64(2), s.ReserveAcquisitions)
	require.Zero(t, s.Exhaustions)
	require.Equal(t, 2, s.Current)
}

func TestDoubleReleasePanics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1})
	u, _ := e.user("app", 0)
	p, ok := u.TryAcquire()
	require.True(t, ok)
	p.Release()
	require.PanicsWithValue(t, "BUG: coordinator permit released twice", p.Release)
}
