package coordinator_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/coordinator/coordtest"
)

// TestConcurrentAcquireRelease hammers one coordinator from several users
// with every operation at once. The limit must hold at every moment and
// every slot must come back. Run it with -race.
func TestConcurrentAcquireRelease(t *testing.T) {
	t.Parallel()
	cfg := coordinator.Config{Database: "db", MaxDBConnections: 6, ReservePoolSize: 2,
		ReservePoolTimeout: 2 * time.Millisecond, MinGuaranteedPoolSize: 1}
	c := coordinator.New(cfg, coordinator.SystemClock{})
	clk := coordtest.NewClock()
	type pool struct {
		u *coordinator.User
		m *coordtest.Member
	}
	var pools []pool
	for _, name := range []string{"a", "b", "c", "d"} {
		m := coordtest.NewMember(clk)
		pools = append(pools, pool{c.Register(name, 0, m), m})
	}

	stop := make(chan struct{})
	watcher := make(chan int, 1)
	go func() {
		peak := 0
		for {
			select {
			case <-stop:
				watcher <- peak
				return
			default:
			}
			s := c.Snapshot()
			peak = max(peak, s.Current)
			if s.ReserveUsed > cfg.ReservePoolSize {
				peak = 1 << 30
			}
			runtime.Gosched()
		}
	}()

	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			pl := pools[w%len(pools)]
			for range 300 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3))*time.Millisecond)
				p, err := pl.u.Acquire(ctx)
				cancel()
				if err != nil {
					continue
				}
				conn := pl.m.Add(p, false)
				runtime.Gosched()
				switch rng.IntN(3) {
				case 0:
					pl.m.Close(conn)
				case 1:
					p.Upgrade()
					pl.m.Close(conn)
				default: // back to idle: a donor for the others
					pl.m.SetIdle(conn, true)
					pl.u.NotifyIdleReturn()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	peak := <-watcher
	require.LessOrEqual(t, peak, cfg.MaxDBConnections+cfg.ReservePoolSize)

	held := 0
	for _, pl := range pools {
		held += pl.m.Load().Total
	}
	s := c.Snapshot()
	require.Equal(t, held, s.Current, "every live connection holds exactly one permit")
	require.Zero(t, s.Waiting)
	for _, pl := range pools {
		pl.m.CloseAll()
	}
	s = c.Snapshot()
	require.Zero(t, s.Current)
	require.Zero(t, s.ReserveUsed)
	t.Logf("evictions=%d reserve_acq=%d exhaustions=%d", s.Evictions, s.ReserveAcquisitions, s.Exhaustions)
}
