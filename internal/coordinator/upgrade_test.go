package coordinator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/coordinator"
)

func TestUpgradeReserveToMain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, coordinator.Config{MaxDBConnections: 1, ReservePoolSize: 1})
	u, _ := e.user("app", 0)
	m1, err := u.Acquire(context.Background())
	require.NoError(t, err)
	r1, err := u.Acquire(context.Background())
	require.NoError(t, err)
	require.True(t, r1.Reserve())

	require.False(t, m1.Upgrade(), "a main permit is never upgraded")
	require.False(t, r1.Upgrade(), "main is full")
	m1.Release()
	require.True(t, r1.Upgrade())
	require.False(t, r1.Reserve())
	s := e.c.Snapshot()
	require.Equal(t, 1, s.Current)
	require.Zero(t, s.ReserveUsed)
	require.Equal(t, uint64(1), s.ReserveAcquisitions, "an upgrade is not an acquisition")

	r1.Release()
	require.Zero(t, e.c.Snapshot().Current, "an upgraded permit returns to main")
}

func TestUpgradeReserveStopsAtFirstFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		freeMain     int
		wantUpgraded int
	}{
		{name: "main full", freeMain: 0, wantUpgraded: 0},
		{name: "room for one", freeMain: 1, wantUpgraded: 1},
		{name: "room for all", freeMain: 3, wantUpgraded: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, coordinator.Config{MaxDBConnections: 4, ReservePoolSize: 3})
			u, _ := e.user("app", 0)
			var mains, reserves []*coordinator.Permit
			for range 7 {
				p, err := u.Acquire(context.Background())
				require.NoError(t, err)
				if p.Reserve() {
					reserves = append(reserves, p)
				} else {
					mains = append(mains, p)
				}
			}
			for _, p := range mains[:tt.freeMain] {
				p.Release()
			}
			idle := append([]*coordinator.Permit{mains[3], nil}, reserves...)
			require.Equal(t, tt.wantUpgraded, e.c.UpgradeReserve(idle))
			s := e.c.Snapshot()
			require.Equal(t, 3-tt.wantUpgraded, s.ReserveUsed)
			require.Equal(t, 7-tt.freeMain, s.Current)
		})
	}
}
