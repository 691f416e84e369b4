package session_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestCancelNeverHitsAnotherClient: cancel requests for client A sent at
// any moment, also while A's transaction ends and its server goes to
// client B, and after A has gone, must never cancel B's statements. Before
// the fix the cancel could be delivered after the server had moved on.
func TestCancelNeverHitsAnotherClient(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	dsn := d.DSN("app", "app-secret", "appdb")

	var wg sync.WaitGroup
	var bQueries, aCancelled atomic.Int64
	bErr := make(chan error, 1)
	// Client B: short statements on the pool's only server.
	wg.Add(1)
	go func() {
		defer wg.Done()
		b, err := pgconn.Connect(context.Background(), dsn)
		if err != nil {
			bErr <- err
			return
		}
		defer b.Close(context.Background())
		for ctx.Err() == nil {
			if _, err := b.Exec(context.Background(), "SELECT pg_sleep(0.0005)").ReadAll(); err != nil {
				bErr <- err
				return
			}
			bQueries.Add(1)
		}
	}()
	// Clients A, one after another: each runs statements while its cancel
	// requests fly, and half of them leave with a reset mid-statement.
	for i := 0; ctx.Err() == nil; i++ {
		a, err := pgconn.Connect(context.Background(), dsn)
		require.NoError(t, err)
		cancels := make(chan struct{})
		go func() {
			defer close(cancels)
			for j := 0; j < 20 && ctx.Err() == nil; j++ {
				_ = a.CancelRequest(context.Background())
			}
		}()
		for j := 0; j < 5; j++ {
			_, err := a.Exec(context.Background(), "SELECT pg_sleep(0.0005)").ReadAll()
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "57014" {
				aCancelled.Add(1)
			}
		}
		<-cancels
		if i%2 == 0 {
			_ = a.Close(context.Background())
		} else {
			// Gone without a Terminate while a cancel may still be
			// under way.
			go func() { _ = a.CancelRequest(context.Background()) }()
			_ = a.Conn().Close()
		}
	}
	wg.Wait()
	select {
	case err := <-bErr:
		t.Fatalf("client B failed after %d statements (A's statements cancelled: %d): %v", bQueries.Load(), aCancelled.Load(), err)
	default:
	}
	require.Positive(t, bQueries.Load())
	t.Logf("B ran %d statements; %d of A's were cancelled", bQueries.Load(), aCancelled.Load())
}
