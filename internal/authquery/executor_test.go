package authquery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/backend"
)

// TestExecutorSlotWaitCounted: a lookup that finds every executor
// connection busy until its deadline fails and is counted as an executor
// error, without dialling.
func TestExecutorSlotWaitCounted(t *testing.T) {
	dials := 0
	st := &Stats{}
	e := NewExecutor("SELECT 1", 1, func(context.Context) (*backend.Conn, error) {
		dials++
		return nil, errors.New("no dial expected")
	}, st)
	busy := <-e.slots // another lookup holds the only connection
	defer func() { e.slots <- busy }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.Lookup(ctx, "someone")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, uint64(1), st.ExecutorErrors.Load())
	require.Zero(t, st.ExecutorQueries.Load())
	require.Zero(t, dials)
}

// TestExecutorWarmFailuresCounted: each executor connection Warm cannot
// open is counted as a warm error (not as a failed lookup); a connect cut
// short because the caller is stopping is not a failure.
func TestExecutorWarmFailuresCounted(t *testing.T) {
	t.Parallel()
	refused := errors.New("connection refused")
	tests := []struct {
		name    string
		workers int
		cancel  bool
		want    uint64
	}{
		{"every connect fails", 3, false, 3},
		{"one worker", 1, false, 1},
		{"stopping", 2, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := &Stats{}
			e := NewExecutor("SELECT 1", tt.workers, func(ctx context.Context) (*backend.Conn, error) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				return nil, refused
			}, st)
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			err := e.Warm(ctx)
			require.Error(t, err)
			if !tt.cancel {
				require.ErrorIs(t, err, refused)
			}
			require.Equal(t, tt.want, st.WarmErrors.Load())
			require.Zero(t, st.ExecutorErrors.Load(), "warming is not a lookup")
		})
	}
}
