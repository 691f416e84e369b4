package session_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
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

// TestCancelOutcomesCounted: every cancel request is counted by what
// became of it in pg_doorman_cancel_requests_total, so an operator sees
// cancels that reach no server.
func TestCancelOutcomesCounted(t *testing.T) {
	d := start(t, "", "transaction", 1)
	dsn := d.DSN("app", "app-secret", "appdb")
	count := func(result string) float64 {
		return counterValue(t, d, "pg_doorman_cancel_requests_total", "result", result)
	}
	waitCount := func(result string, want float64) {
		t.Helper()
		require.Eventually(t, func() bool { return count(result) == want }, 5*time.Second, 10*time.Millisecond,
			"cancel_requests_total{result=%q} = %v, want %v", result, count(result), want)
	}
	for _, r := range []string{"forwarded", "answered", "failed", "nothing", "unknown"} {
		require.Zero(t, count(r), r)
	}

	// A key no client has.
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port), 5*time.Second)
	require.NoError(t, err)
	_, err = nc.Write(protocol.CancelRequest{ProcessID: 12345, SecretKey: 67890}.Encode(nil))
	require.NoError(t, err)
	_ = nc.Close()
	waitCount("unknown", 1)

	// An idle client of a transaction pool holds no server.
	a, err := pgconn.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer a.Close(context.Background())
	require.NoError(t, a.CancelRequest(context.Background()))
	waitCount("nothing", 1)

	// A client that waits for the pool's only server, held by a's
	// transaction: its statement is cancelled in pg_doorman.
	_, err = a.Exec(context.Background(), "BEGIN; SELECT 1").ReadAll()
	require.NoError(t, err)
	b, err := pgconn.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer b.Close(context.Background())
	bDone := make(chan error, 1)
	go func() { _, err := b.Exec(context.Background(), "SELECT 1").ReadAll(); bDone <- err }()
	bErr := cancelUntilDone(t, b, bDone)
	var pe *pgconn.PgError
	require.ErrorAs(t, bErr, &pe)
	require.Equal(t, "57014", pe.Code)
	require.Positive(t, count("answered"))
	_, err = a.Exec(context.Background(), "ROLLBACK").ReadAll()
	require.NoError(t, err)

	// A statement running on a server: the cancel goes to PostgreSQL.
	aDone := make(chan error, 1)
	go func() { _, err := a.Exec(context.Background(), "SELECT pg_sleep(30)").ReadAll(); aDone <- err }()
	aErr := cancelUntilDone(t, a, aDone)
	require.ErrorAs(t, aErr, &pe)
	require.Equal(t, "57014", pe.Code)
	require.Positive(t, count("forwarded"))
	require.Zero(t, count("failed"))
}

// cancelUntilDone sends c's cancel request every 20ms until its statement
// ends (done) and returns how it ended.
func cancelUntilDone(t *testing.T, c *pgconn.PgConn, done <-chan error) error {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			_ = c.CancelRequest(context.Background())
		case <-deadline:
			t.Fatal("the statement did not end within 10s of cancel requests")
		}
	}
}
