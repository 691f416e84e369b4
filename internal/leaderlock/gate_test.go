package leaderlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/doorman-go/doorman/internal/leaderlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checker answers what it is set to, counting requests; with block set it
// holds every request until released.
type checker struct {
	held    atomic.Bool
	err     atomic.Pointer[error]
	calls   atomic.Int32
	block   chan struct{}
	started chan struct{}
}

func (c *checker) HoldsLeaderLock(ctx context.Context, api string) (bool, error) {
	c.calls.Add(1)
	if c.block != nil {
		c.started <- struct{}{}
		select {
		case <-c.block:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if e := c.err.Load(); e != nil {
		return false, *e
	}
	return c.held.Load(), nil
}

func TestGateAnswers(t *testing.T) {
	boom := errors.New("connection refused")
	for _, tc := range []struct {
		name                    string
		held                    bool
		err                     error
		want                    bool
		wantHeld, wantNot, wErr uint64
	}{
		{"held", true, nil, true, 1, 0, 0},
		{"not held", false, nil, false, 0, 1, 0},
		{"no answer", true, boom, false, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &checker{}
			c.held.Store(tc.held)
			if tc.err != nil {
				c.err.Store(&tc.err)
			}
			var st leaderlock.Stats
			g := leaderlock.New("http://127.0.0.1:8008", time.Hour, time.Second, c, &st)
			for range 3 {
				require.Equal(t, tc.want, g.Held(context.Background()))
			}
			require.EqualValues(t, 1, c.calls.Load(), "one request per ttl")
			require.Equal(t, tc.wantHeld, st.Held.Load())
			require.Equal(t, tc.wantNot, st.NotHeld.Load())
			require.Equal(t, tc.wErr, st.Errors.Load())
		})
	}
}

func TestGateAsksAgainAfterTTL(t *testing.T) {
	c := &checker{}
	c.held.Store(true)
	g := leaderlock.New("http://x:8008", 20*time.Millisecond, time.Second, c, &leaderlock.Stats{})
	require.True(t, g.Held(context.Background()))
	c.held.Store(false)
	require.True(t, g.Held(context.Background()), "within the ttl: the cached answer")
	require.Eventually(t, func() bool { return !g.Held(context.Background()) }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 2, c.calls.Load())
}

// Concurrent callers share the request in flight; one whose context ends
// leaves with false and does not cut the request short for the others.
func TestGateSharesTheRequestInFlight(t *testing.T) {
	c := &checker{block: make(chan struct{}), started: make(chan struct{}, 1)}
	c.held.Store(true)
	g := leaderlock.New("http://x:8008", time.Hour, 5*time.Second, c, &leaderlock.Stats{})
	ctx, cancel := context.WithCancel(context.Background())
	impatient := make(chan bool)
	go func() { impatient <- g.Held(ctx) }()
	<-c.started
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = g.Held(context.Background()) }()
	}
	cancel()
	require.False(t, <-impatient, "a caller whose context ended")
	close(c.block)
	wg.Wait()
	for i, r := range results {
		require.True(t, r, "caller %d", i)
	}
	require.EqualValues(t, 1, c.calls.Load())
}

func TestGateTimeout(t *testing.T) {
	c := &checker{block: make(chan struct{}), started: make(chan struct{}, 1)}
	defer close(c.block)
	var st leaderlock.Stats
	g := leaderlock.New("http://x:8008", time.Hour, 30*time.Millisecond, c, &st)
	// Without the timeout this would block until the test's own deadline.
	require.False(t, g.Held(context.Background()))
	require.EqualValues(t, 1, st.Errors.Load())
}
