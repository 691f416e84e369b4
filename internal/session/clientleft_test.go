package session_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/protocol"
)

// appCounter is the value of a per-pool counter for user app of appdb.
func appCounter(t *testing.T, d *apptest.Instance, name string) float64 {
	t.Helper()
	mfs, err := d.Metrics.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["user"] == "app" && labels["database"] == "appdb" {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s for app/appdb", name)
	return 0
}

// TestClientLeftWhileWaiting: a client that sends a statement, waits for a
// server (the pool's only one is busy) and leaves (closes or resets its
// socket, as a client does when its own timeout fires) does not have the
// statement run once a server comes: PostgreSQL with
// client_connection_check_interval would cancel it too, and the client
// cannot learn of its outcome. The session ends and is counted; the pool
// and its other clients go on.
func TestClientLeftWhileWaiting(t *testing.T) {
	for i, tc := range []struct {
		name  string
		leave func(t *testing.T, c net.Conn)
	}{
		{"close", func(t *testing.T, c net.Conn) { require.NoError(t, c.Close()) }},
		{"reset", func(t *testing.T, c net.Conn) {
			tc, ok := c.(*net.TCPConn)
			require.True(t, ok, "a TCP client: %T", c)
			require.NoError(t, tc.SetLinger(0))
			require.NoError(t, tc.Close())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := start(t, "", "transaction", 1)
			ctx := context.Background()
			dsn := d.DSN("app", "app-secret", "appdb")
			holder := connect(t, dsn)
			tx, err := holder.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "SELECT 1") // holds the pool's only server
			require.NoError(t, err)

			id := 7100 + i
			waiter, err := pgconnConnect(ctx, dsn)
			require.NoError(t, err)
			_, err = waiter.Write(protocol.Query{String: fmt.Sprintf("INSERT INTO items VALUES (%d, 'left while waiting')", id)}.Encode(nil))
			require.NoError(t, err)
			p, ok := d.Daemon.Pools.Lookup("appdb", "app")
			require.True(t, ok)
			require.Eventually(t, func() bool { return p.Stats.ClientsWaiting.Load() >= 1 }, 5*time.Second, 5*time.Millisecond)
			waitingSince := time.Now()
			tc.leave(t, waiter)
			// The rule applies to waits of 100 ms or more: let this one
			// last that long before the server comes (the time is the
			// condition under test, not a synchronisation).
			time.Sleep(time.Until(waitingSince.Add(150 * time.Millisecond)))
			require.NoError(t, tx.Commit(ctx))

			require.Eventually(t, func() bool { return p.Stats.LeftWhileWaiting.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
			var n int
			require.NoError(t, holder.QueryRow(ctx, "SELECT count(*) FROM items WHERE id = $1", id).Scan(&n))
			require.Zero(t, n, "the statement of the client that left was not run")
			require.Equal(t, 1.0, appCounter(t, d, "pg_doorman_pools_clients_left_waiting_total"))
		})
	}
}

// TestCancelWhileWaiting: a cancel request for a client whose statement
// waits for a server (the pool's only one is busy) cancels that statement
// as PostgreSQL would: ERROR 57014 at once, the statement never sent, and
// the session goes on. Simple and extended protocol.
func TestCancelWhileWaiting(t *testing.T) {
	for i, tc := range []struct {
		name string
		run  func(ctx context.Context, c *pgconn.PgConn, sql string) error
	}{
		{"simple", func(ctx context.Context, c *pgconn.PgConn, sql string) error {
			_, err := c.Exec(ctx, sql).ReadAll()
			return err
		}},
		{"extended", func(ctx context.Context, c *pgconn.PgConn, sql string) error {
			return c.ExecParams(ctx, sql, nil, nil, nil, nil).Read().Err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := start(t, "", "transaction", 1)
			ctx := context.Background()
			dsn := d.DSN("app", "app-secret", "appdb")
			holder := connect(t, dsn)
			tx, err := holder.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "SELECT 1") // holds the pool's only server
			require.NoError(t, err)

			waiter, err := pgconn.Connect(ctx, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = waiter.Close(context.Background()) })
			id := 7200 + i
			done := make(chan error, 1)
			go func() {
				done <- tc.run(ctx, waiter, fmt.Sprintf("INSERT INTO items VALUES (%d, 'canceled while waiting')", id))
			}()
			p, ok := d.Daemon.Pools.Lookup("appdb", "app")
			require.True(t, ok)
			require.Eventually(t, func() bool { return p.Stats.ClientsWaiting.Load() >= 1 }, 5*time.Second, 5*time.Millisecond)
			require.NoError(t, waiter.CancelRequest(ctx))
			select {
			case err := <-done:
				var pe *pgconn.PgError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, "57014", pe.Code, "%v", err)
			case <-time.After(5 * time.Second):
				t.Fatal("the cancelled statement was not answered while the server stayed busy")
			}
			require.NoError(t, tx.Commit(ctx))
			// The session goes on, and the cancelled statement never ran.
			require.NoError(t, tc.run(ctx, waiter, "SELECT 1"))
			var n int
			require.NoError(t, holder.QueryRow(ctx, "SELECT count(*) FROM items WHERE id = $1", id).Scan(&n))
			require.Zero(t, n)
			require.Equal(t, 1.0, appCounter(t, d, "pg_doorman_pools_waits_canceled_total"))
		})
	}
}
