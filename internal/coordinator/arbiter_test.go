package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/coordinator"
)

// TestArbiterRanksWaiters parks four requests and frees one slot at a time:
// starving users first, then more queued clients, then arrival order.
func TestArbiterRanksWaiters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  coordinator.Config
		skip int // hog permits that are main and stay held
	}{
		{name: "main slots", cfg: coordinator.Config{MaxDBConnections: 4}},
		{name: "reserve slots", cfg: coordinator.Config{MaxDBConnections: 1, ReservePoolSize: 4}, skip: 1},
	}
	arrivals := []struct {
		user    string
		minPool int
		queued  int
	}{
		{user: "plain1", queued: 1},
		{user: "busy5", queued: 5},
		{user: "starving", minPool: 2},
		{user: "plain1b", queued: 1},
	}
	want := []string{"starving", "busy5", "plain1", "plain1b"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.ReservePoolTimeout = time.Hour
			e := newEnv(t, tt.cfg)
			hog, hm := e.user("hog", 0)
			var held []*coordinator.Permit
			for range tt.cfg.MaxDBConnections + tt.cfg.ReservePoolSize {
				held = append(held, e.hold(hog, hm, false).Permit)
			}
			results := map[string]<-chan result{}
			for i, a := range arrivals {
				u, m := e.user(a.user, a.minPool)
				m.Set(a.queued, 0)
				results[a.user] = goAcquire(context.Background(), u)
				e.parked(i + 1)
			}
			for i, name := range want {
				held[tt.skip+i].Release()
				r := recv(t, results[name])
				require.NoError(t, r.err)
				require.Equal(t, name, r.p.User().Name(), "slot %d", i)
				require.Equal(t, coordinator.PhaseC, r.p.Phase())
				require.Equal(t, tt.skip > 0, r.p.Reserve())
				e.parked(len(want) - i - 1)
			}
			s := e.c.Snapshot()
			require.Equal(t, uint64(2*tt.cfg.ReservePoolSize), s.ReserveAcquisitions,
				"a reserve slot handed to a waiter is a reserve acquisition")
			require.Equal(t, tt.cfg.MaxDBConnections+tt.cfg.ReservePoolSize, s.Current)
		})
	}
}
