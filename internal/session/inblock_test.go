package session_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Inside a transaction block each statement is driven by the client's own
// goroutine: no second goroutine waits on the server while the client is
// idle in the block.
func TestTransactionBlockOneGoroutine(t *testing.T) {
	d := start(t, "", "transaction", 20)
	ctx := context.Background()
	const n = 20
	base := runtime.NumGoroutine()
	txs := make([]pgx.Tx, n)
	for i := range txs {
		c := connect(t, d.DSN("app", "app-secret", "appdb"))
		tx, err := c.Begin(ctx)
		require.NoError(t, err)
		var got int
		require.NoError(t, tx.QueryRow(ctx, "SELECT $1::int", i).Scan(&got))
		require.Equal(t, i, got)
		txs[i] = tx
	}
	// One goroutine per client in a block (it holds a server, so it is not
	// parked); with a server-side goroutine each there would be 2n.
	require.Less(t, runtime.NumGoroutine(), base+n+n/2, "goroutines with %d clients idle in a block", n)
	for _, tx := range txs {
		require.NoError(t, tx.Commit(ctx))
	}
}

// A client that goes away idle in a transaction block leaves its server
// rolled back and back in the pool, not destroyed.
func TestDisconnectInsideBlockRollsBack(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	tag := fmt.Sprintf("inblock-%d", time.Now().UnixNano())
	c, err := pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb")+" default_query_exec_mode=exec")
	require.NoError(t, err)
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	_, err = tx.Exec(ctx, "INSERT INTO items (id, note) VALUES ((random()*1e9)::int, $1)", tag)
	require.NoError(t, err)
	require.NoError(t, c.PgConn().Conn().Close()) // gone, mid-block

	c2 := connect(t, d.DSN("app", "app-secret", "appdb"))
	var pid2, rows int
	require.NoError(t, c2.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid2))
	require.Equal(t, pid, pid2, "the one server connection was rolled back and reused")
	require.NoError(t, c2.QueryRow(ctx, "SELECT count(*) FROM items WHERE note = $1", tag).Scan(&rows))
	require.Zero(t, rows, "the insert of the client that left was rolled back")
}
