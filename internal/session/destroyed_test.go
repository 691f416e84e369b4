package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestBrokenServerCountedDestroyed: a server terminated under its client's
// open transaction is not returned to the pool: it counts in
// pools_server_events_total{event="destroyed"} (and in closed), and the
// next transaction runs on another backend.
func TestBrokenServerCountedDestroyed(t *testing.T) {
	d := start(t, "", "transaction", 2)
	ctx := context.Background()
	events := func(event string) float64 {
		return counterValue(t, d, "pg_doorman_pools_server_events_total", "event", event, "database", "appdb")
	}
	destroyed, closed := events("destroyed"), events("closed")
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	super, err := pgx.Connect(ctx, pg.SuperDSN("postgres"))
	require.NoError(t, err)
	defer super.Close(ctx)
	var ok bool
	require.NoError(t, super.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok))
	require.True(t, ok)
	_, err = tx.Exec(ctx, "SELECT 1")
	require.Error(t, err, "its server is gone")
	require.Eventually(t, func() bool { return events("destroyed") == destroyed+1 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, closed+1, events("closed"), "destroyed is part of closed")

	next := connect(t, d.DSN("app", "app-secret", "appdb"))
	var other int
	require.NoError(t, next.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&other))
	require.NotEqual(t, pid, other)
}

// TestPoolRemovedMidSession: a logged-in client whose pool a reload
// removed is told, at its next transaction, that the pool is closed
// (08P01), and the end is counted in
// transaction_acquire_failures_total{reason="pool_closed"}.
func TestPoolRemovedMidSession(t *testing.T) {
	d := start(t, "", "transaction", 2)
	ctx := context.Background()
	before := counterValue(t, d, "pg_doorman_transaction_acquire_failures_total", "reason", "pool_closed")
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	var n int
	require.NoError(t, c.QueryRow(ctx, "SELECT 1").Scan(&n))
	cfg := poolConfig(t, "", "transaction", 2)
	i := strings.Index(cfg, "      - username: app\n")
	j := strings.Index(cfg, "      - username: app_md5\n")
	require.True(t, i > 0 && j > i)
	d.WriteConfig(t, cfg[:i]+cfg[j:]) // the user app is gone, and its pool with it
	require.NoError(t, d.Daemon.Reload())
	_, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.False(t, ok)
	err := c.QueryRow(ctx, "SELECT 1").Scan(&n)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "08P01", pe.Code)
	require.Contains(t, pe.Message, "pool is closed")
	require.Equal(t, before+1, counterValue(t, d, "pg_doorman_transaction_acquire_failures_total", "reason", "pool_closed"))
}
