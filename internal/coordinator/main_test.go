package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/coordinator/coordtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one coordinator with a manual clock.
type env struct {
	t   *testing.T
	c   *coordinator.Coordinator
	clk *coordtest.Clock
}

func newEnv(t *testing.T, cfg coordinator.Config) *env {
	t.Helper()
	if cfg.Database == "" {
		cfg.Database = "shared_db"
	}
	clk := coordtest.NewClock()
	return &env{t: t, c: coordinator.New(cfg, clk), clk: clk}
}

func (e *env) user(name string, minPool int) (*coordinator.User, *coordtest.Member) {
	m := coordtest.NewMember(e.clk)
	return e.c.Register(name, minPool, m), m
}

// hold acquires a permit for u and records it as a connection of m.
func (e *env) hold(u *coordinator.User, m *coordtest.Member, idle bool) *coordtest.Conn {
	e.t.Helper()
	p, err := u.Acquire(context.Background())
	require.NoError(e.t, err)
	return m.Add(p, idle)
}

// parked waits until n requests sit in phase C.
func (e *env) parked(n int) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return e.c.Snapshot().Waiting == n },
		5*time.Second, time.Millisecond, "want %d parked waiters", n)
}

type result struct {
	p   *coordinator.Permit
	err error
}

// goAcquire runs Acquire in the background.
func goAcquire(ctx context.Context, u *coordinator.User) <-chan result {
	ch := make(chan result, 1)
	go func() {
		p, err := u.Acquire(ctx)
		ch <- result{p, err}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("acquire did not return")
		return result{}
	}
}
