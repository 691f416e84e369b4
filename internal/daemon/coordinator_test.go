package daemon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// TestCoordinatorEvictionAndReserve: two users share max_db_connections =
// 10. The idle user holds all 10 as idle connections; the busy user's
// burst is absorbed first by the reserve, then by evicting the idle user's
// connections. SHOW POOL_COORDINATOR shows both.
func TestCoordinatorEvictionAndReserve(t *testing.T) {
	setup(t)
	vIdle := user(t, "coord_idle", "idle-secret")
	vBusy := user(t, "coord_busy", "busy-secret")
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 20s
pools:
  coord:
    server_host: 127.0.0.1
    server_port: %d
    server_database: benchdb
    max_db_connections: 10
    reserve_pool_size: 2
    reserve_pool_timeout: 300ms
    min_connection_lifetime: 0
    users:
      - username: coord_idle
        password: '%s'
        pool_size: 10
      - username: coord_busy
        password: '%s'
        pool_size: 10
`, pg.Port, vIdle, vBusy))
	ctx := context.Background()
	hold := func(user, pw string, n int) []pgx.Tx {
		var mu sync.Mutex
		var txs []pgx.Tx
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := pgx.Connect(ctx, d.DSN(user, pw, "coord")+" default_query_exec_mode=exec")
				if !assertNoError(t, err) {
					return
				}
				t.Cleanup(func() { c.Close(ctx) })
				tx, err := c.Begin(ctx)
				if !assertNoError(t, err) {
					return
				}
				_, err = tx.Exec(ctx, "SELECT 1")
				if !assertNoError(t, err) {
					return
				}
				mu.Lock()
				txs = append(txs, tx)
				mu.Unlock()
			}()
		}
		wg.Wait()
		require.Len(t, txs, n)
		return txs
	}
	// The idle user takes all 10 permits, then goes idle.
	for _, tx := range hold("coord_idle", "idle-secret", 10) {
		require.NoError(t, tx.Commit(ctx))
	}
	idlePool, _ := d.Daemon.Pools.Lookup("coord", "coord_idle")
	// The server goes back to the pool right after the client has its
	// ReadyForQuery, so the last commits may return a moment before.
	require.Eventually(t, func() bool { return idlePool.Conns().Stats().Idle == 10 }, 5*time.Second, 10*time.Millisecond)

	// The busy user needs 4 at once.
	start := time.Now()
	busy := hold("coord_busy", "busy-secret", 4)
	t.Logf("busy user got 4 connections in %s", time.Since(start))
	coords := d.Daemon.Pools.Coordinators()
	require.Len(t, coords, 1)
	s := coords[0].Snapshot()
	t.Logf("coordinator: %+v", s)
	require.GreaterOrEqual(t, s.ReserveAcquisitions, uint64(1), "the reserve absorbed part of the burst")
	require.GreaterOrEqual(t, s.Evictions, uint64(1), "a busy user took a slot from the idle one")
	require.LessOrEqual(t, s.Current, 12, "max_db_connections + reserve_pool_size")
	require.LessOrEqual(t, idlePool.Conns().Stats().Total, 9)
	for _, tx := range busy {
		require.NoError(t, tx.Commit(ctx))
	}
	// The retain task moves idle reserve permits to main once main has
	// room: here the idle user's connections are closed.
	busyPool, _ := d.Daemon.Pools.Lookup("coord", "coord_busy")
	require.Eventually(t, func() bool { return busyPool.Conns().Stats().Idle == 4 }, 5*time.Second, 10*time.Millisecond)
	idlePool.Conns().Reconnect()
	d.Daemon.Pools.RetainOnce(ctx)
	s = coords[0].Snapshot()
	require.Equal(t, 0, s.ReserveUsed, "reserve permits upgraded to main by the retain task")
	require.Equal(t, 4, s.Current)

	admin, err := pgx.Connect(ctx, d.DSN("admin", "admin-secret", "pgdoorman")+" default_query_exec_mode=simple_protocol")
	require.NoError(t, err)
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, "SHOW POOL_COORDINATOR")
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		v, err := rows.Values()
		require.NoError(t, err)
		got = append(got, fmt.Sprint(v...))
		require.Equal(t, "coord", v[0])
		require.Equal(t, "10", fmt.Sprint(v[1]), "max_db_conn")
		require.NotEqual(t, "0", fmt.Sprint(v[5]), "evictions")
		require.NotEqual(t, "0", fmt.Sprint(v[6]), "reserve_acq")
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, 1)
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestCoordinatorPermitWaitEndsAtQueryWaitTimeout: a login whose first
// server connection waits for a database permit (max_db_connections held
// by another user's transaction, a reserve_pool_timeout longer than
// query_wait_timeout) gets query_wait_timeout when that runs out, as a
// client that waits for a server does, counted as a wait timeout; not a
// connect failure.
func TestCoordinatorPermitWaitEndsAtQueryWaitTimeout(t *testing.T) {
	setup(t)
	vA := user(t, "coord_qwt_a", "a-secret")
	vB := user(t, "coord_qwt_b", "b-secret")
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  query_wait_timeout: 700ms
pools:
  coordqwt:
    server_host: 127.0.0.1
    server_port: %d
    server_database: benchdb
    max_db_connections: 1
    reserve_pool_size: 0
    reserve_pool_timeout: 5s
    users:
      - username: coord_qwt_a
        password: '%s'
        pool_size: 1
      - username: coord_qwt_b
        password: '%s'
        pool_size: 1
`, pg.Port, vA, vB))
	ctx := context.Background()
	a, err := pgx.Connect(ctx, d.DSN("coord_qwt_a", "a-secret", "coordqwt")+" default_query_exec_mode=exec")
	require.NoError(t, err)
	defer a.Close(ctx)
	tx, err := a.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "SELECT 1")
	require.NoError(t, err)

	start := time.Now()
	_, err = pgx.Connect(ctx, d.DSN("coord_qwt_b", "b-secret", "coordqwt")+" default_query_exec_mode=exec")
	require.Error(t, err)
	require.GreaterOrEqual(t, time.Since(start), 700*time.Millisecond, "it waited for query_wait_timeout")
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "08P01", pe.Code, "%s", pe.Message)
	require.Equal(t, "query_wait_timeout", pe.Message)
	bPool, _ := d.Daemon.Pools.Lookup("coordqwt", "coord_qwt_b")
	require.Equal(t, uint64(1), bPool.Stats.WaitTimeouts.Load())
}
