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
