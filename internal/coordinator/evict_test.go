package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/coordinator"
)

func TestRankDonors(t *testing.T) {
	t.Parallel()
	d := func(user string, idle, spare int, p95ms int) coordinator.Donor {
		return coordinator.Donor{User: user, Spare: spare,
			Load: coordinator.Load{Idle: idle, P95: time.Duration(p95ms) * time.Millisecond}}
	}
	names := func(ds []coordinator.Donor) []string {
		out := []string{}
		for _, x := range ds {
			out = append(out, x.User)
		}
		return out
	}
	tests := []struct {
		name string
		in   []coordinator.Donor
		want []string
	}{
		{name: "empty", want: []string{}},
		{name: "slow pool gives first", in: []coordinator.Donor{d("fast", 5, 10, 1), d("slow", 1, 1, 15)},
			want: []string{"slow", "fast"}},
		{name: "spare breaks p95 ties", in: []coordinator.Donor{d("a", 1, 1, 5), d("b", 1, 3, 5), d("c", 1, 2, 5)},
			want: []string{"b", "c", "a"}},
		{name: "name breaks full ties", in: []coordinator.Donor{d("y", 1, 1, 5), d("x", 1, 1, 5)},
			want: []string{"x", "y"}},
		{name: "no idle connection", in: []coordinator.Donor{d("busy", 0, 9, 99), d("ok", 1, 1, 1)},
			want: []string{"ok"}},
		{name: "at or below effective minimum", in: []coordinator.Donor{d("at", 3, 0, 99), d("below", 3, -2, 99)},
			want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, names(coordinator.RankDonors(tt.in)))
		})
	}
}

func TestEvictionPicksHighestP95(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 3, MinConnectionLifetime: time.Second})
	app, _ := e.user("app", 0)
	fast, fm := e.user("fast", 0)
	slow, sm := e.user("slow", 0)
	fm.Set(0, time.Millisecond)
	sm.Set(0, 15*time.Millisecond)
	e.hold(fast, fm, true)
	e.hold(fast, fm, true)
	e.hold(slow, sm, true)
	e.clk.Advance(time.Minute)
	p, err := app.Acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, coordinator.PhaseB, p.Phase())
	require.Equal(t, 0, sm.Load().Total, "the slow pool gave its connection")
	require.Equal(t, 2, fm.Load().Total)
	require.Equal(t, 0, fm.EvictCalls())
}

func TestEvictionFallsToNextDonorWhenTooYoung(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 2, MinConnectionLifetime: 30 * time.Second})
	app, _ := e.user("app", 0)
	old, om := e.user("old", 0)
	young, ym := e.user("young", 0)
	ym.Set(0, time.Second) // ranked first
	e.hold(old, om, true)
	e.clk.Advance(time.Minute)
	e.hold(young, ym, true)
	p, err := app.Acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, coordinator.PhaseB, p.Phase())
	require.Equal(t, 1, ym.EvictCalls(), "asked first")
	require.Equal(t, 1, ym.Load().Total, "but too young to go")
	require.Zero(t, om.Load().Total)
	require.Equal(t, uint64(1), e.c.Snapshot().Evictions)
}

func TestUnregisteredUserIsNoDonor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, MinConnectionLifetime: time.Second})
	app, _ := e.user("app", 0)
	gone, gm := e.user("gone", 0)
	conn := e.hold(gone, gm, true)
	e.clk.Advance(time.Minute)
	gone.Unregister()
	_, err := app.Acquire(context.Background())
	require.ErrorIs(t, err, coordinator.ErrExhausted)
	require.Zero(t, gm.EvictCalls())
	gm.Close(conn) // its permit is still valid
	require.Zero(t, e.c.Snapshot().Current)
}
