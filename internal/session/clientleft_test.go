package session_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/session"
)

// busyPool starts pg_doorman with a pool of one server for app/appdb and
// holds that server in an open transaction of another client: the next
// statement of any client waits. tx.Commit frees the server.
func busyPool(t *testing.T) (d *apptest.Instance, p *pooler.Pool, holder *pgx.Conn, tx pgx.Tx) {
	t.Helper()
	return busyPoolWith(t, "")
}

// busyPoolWith is busyPool with extraGeneral in the general section.
func busyPoolWith(t *testing.T, extraGeneral string) (d *apptest.Instance, p *pooler.Pool, holder *pgx.Conn, tx pgx.Tx) {
	t.Helper()
	d = start(t, extraGeneral, "transaction", 1)
	ctx := context.Background()
	holder = connect(t, d.DSN("app", "app-secret", "appdb"))
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	return d, p, holder, tx
}

// requireWaiting waits until a client of p waits for a server.
func requireWaiting(t *testing.T, p *pooler.Pool) {
	t.Helper()
	require.Eventually(t, func() bool { return p.Stats.ClientsWaiting.Load() >= 1 }, 5*time.Second, 5*time.Millisecond)
}

// TestClientLeftWhileWaiting: a client that sends a statement, waits for a
// server (the pool's only one is busy) at least session.LeftCheckAfter and leaves (closes or resets its
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
			d, p, holder, tx := busyPool(t)
			ctx := context.Background()
			id := 7100 + i
			waiter, err := pgconnConnect(ctx, d.DSN("app", "app-secret", "appdb"))
			require.NoError(t, err)
			_, err = waiter.Write(protocol.Query{String: fmt.Sprintf("INSERT INTO items VALUES (%d, 'left while waiting')", id)}.Encode(nil))
			require.NoError(t, err)
			requireWaiting(t, p)
			waitSeen := time.Now()
			tc.leave(t, waiter)
			// The look at the client comes only after a wait of
			// LeftCheckAfter: the server is given back once the wait is
			// that long, the condition being time itself.
			time.Sleep(time.Until(waitSeen.Add(session.LeftCheckAfter)))
			require.NoError(t, tx.Commit(ctx))

			require.Eventually(t, func() bool { return p.Stats.LeftWhileWaiting.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
			var n int
			require.NoError(t, holder.QueryRow(ctx, "SELECT count(*) FROM items WHERE id = $1", id).Scan(&n))
			require.Zero(t, n, "the statement of the client that left was not run")
			require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_pools_clients_left_waiting_total", "user", "app"))
		})
	}
}

// TestClientResetDuringShortWait: a client that resets its socket during a
// wait shorter than LeftCheckAfter is not looked at, so its statement may
// run; either way nothing is damaged: the statement ran and was not counted
// as left, or (the wait outlasted the threshold on a slow machine) it did
// not run and was counted, and the pool's one server goes on serving.
func TestClientResetDuringShortWait(t *testing.T) {
	d, p, holder, tx := busyPool(t)
	ctx := context.Background()
	const id = 7150
	waiter, err := pgconnConnect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	_, err = waiter.Write(protocol.Query{String: fmt.Sprintf("INSERT INTO items VALUES (%d, 'reset during a short wait')", id)}.Encode(nil))
	require.NoError(t, err)
	requireWaiting(t, p)
	tcp, ok := waiter.(*net.TCPConn)
	require.True(t, ok, "a TCP client: %T", waiter)
	require.NoError(t, tcp.SetLinger(0))
	require.NoError(t, tcp.Close())
	require.NoError(t, tx.Commit(ctx))

	// FIFO: the waiter's INSERT (if sent) has run before this count.
	var n int
	require.NoError(t, holder.QueryRow(ctx, "SELECT count(*) FROM items WHERE id = $1", id).Scan(&n))
	left := p.Stats.LeftWhileWaiting.Load()
	t.Logf("inserted %d, counted as left %d", n, left)
	require.True(t, (n == 1 && left == 0) || (n == 0 && left == 1), "inserted %d, counted as left %d", n, left)
	for i := range 3 {
		var v int
		require.NoError(t, holder.QueryRow(ctx, "SELECT $1::int", i).Scan(&v), "the server serves on")
		require.Equal(t, i, v)
	}
	require.Eventually(t, func() bool { return p.Stats.ClientsActive.Load() == 0 }, 5*time.Second, 5*time.Millisecond,
		"the reset client's session ended and gave its server back")
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
			d, p, holder, tx := busyPool(t)
			ctx := context.Background()
			waiter, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = waiter.Close(context.Background()) })
			id := 7200 + i
			done := make(chan error, 1)
			go func() {
				done <- tc.run(ctx, waiter, fmt.Sprintf("INSERT INTO items VALUES (%d, 'canceled while waiting')", id))
			}()
			requireWaiting(t, p)
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
			require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_pools_waits_canceled_total", "user", "app"))
		})
	}
}
