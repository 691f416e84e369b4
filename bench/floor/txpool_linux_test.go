package floor

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// TestTxPool runs real clients through ModeTxPool in front of a real
// PostgreSQL: transactions are lent a server each and see their own
// work, at most the pool's size of servers serves them, a client that
// leaves inside a transaction takes its server with it, a waiting client
// is served once the server comes back, and a client that sends garbage
// is closed without harm to the others.
func TestTxPool(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	pg.CreateUser(t, "floor", "floor", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	super, err := pgx.Connect(ctx, pg.SuperDSN("postgres"))
	require.NoError(t, err)
	defer super.Close(context.Background())
	_, err = super.Exec(ctx, "CREATE TABLE t (c int, i int); GRANT ALL ON t TO floor")
	require.NoError(t, err)

	start := func(t *testing.T, pool int) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Serve(sctx, ln, pg.Addr(), Config{Mode: ModeTxPool, PoolSize: pool}) }()
		t.Cleanup(func() {
			stop()
			require.NoError(t, <-done)
		})
		return ln.Addr().String()
	}
	connect := func(t *testing.T, addr string, mode pgx.QueryExecMode) *pgx.Conn {
		host, port, _ := net.SplitHostPort(addr)
		cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%s user=floor password=floor dbname=postgres sslmode=disable", host, port))
		require.NoError(t, err)
		cfg.DefaultQueryExecMode = mode
		c, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	backends := func() int {
		var n int
		require.NoError(t, super.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'floor'").Scan(&n))
		return n
	}

	t.Run("transactions share the pool", func(t *testing.T) {
		addr := start(t, 2)
		const clients, rounds = 6, 15
		conns := make([]*pgx.Conn, clients)
		for i := range conns {
			mode := pgx.QueryExecModeSimpleProtocol
			if i%2 == 1 {
				mode = pgx.QueryExecModeExec // extended protocol, unnamed statements
			}
			conns[i] = connect(t, addr, mode)
		}
		// Logins beyond the pool's size were closed with Terminate.
		require.Eventually(t, func() bool { return backends() == 2 }, 10*time.Second, 20*time.Millisecond)
		var (
			mu   sync.Mutex
			pids = map[uint32]bool{}
			wg   sync.WaitGroup
			errs = make(chan error, clients)
		)
		for i, c := range conns {
			wg.Go(func() {
				for r := range rounds {
					tx, err := c.Begin(ctx)
					if err == nil {
						_, err = tx.Exec(ctx, "INSERT INTO t VALUES ($1, $2)", i, r)
					}
					var n int
					var pid uint32
					if err == nil {
						err = tx.QueryRow(ctx, "SELECT count(*), pg_backend_pid() FROM t WHERE c = $1", i).Scan(&n, &pid)
					}
					if err == nil {
						err = tx.Commit(ctx)
					}
					if err == nil && n != r+1 {
						err = fmt.Errorf("client %d round %d saw %d rows", i, r, n)
					}
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					pids[pid] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.LessOrEqual(t, len(pids), 2, "backends seen by the transactions")
		require.Equal(t, 2, backends())
	})

	t.Run("a client gone inside a transaction takes its server", func(t *testing.T) {
		addr := start(t, 1)
		a := connect(t, addr, pgx.QueryExecModeSimpleProtocol)
		_, err := a.Exec(ctx, "BEGIN")
		require.NoError(t, err)
		var pidA uint32
		require.NoError(t, a.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pidA))
		require.NoError(t, a.PgConn().Conn().Close()) // no Terminate
		b := connect(t, addr, pgx.QueryExecModeSimpleProtocol)
		var outside bool
		var pidB uint32
		// Outside a transaction block now() is the statement's own start.
		require.NoError(t, b.QueryRow(ctx, "SELECT now() = statement_timestamp(), pg_backend_pid()").Scan(&outside, &pidB))
		require.True(t, outside, "the next client must not land in the gone client's transaction")
		require.NotEqual(t, pidA, pidB)
	})

	t.Run("a waiting client is served when the server comes back", func(t *testing.T) {
		addr := start(t, 1)
		a := connect(t, addr, pgx.QueryExecModeSimpleProtocol)
		b := connect(t, addr, pgx.QueryExecModeSimpleProtocol)
		require.Eventually(t, func() bool { return backends() == 1 }, 10*time.Second, 20*time.Millisecond)
		_, err := a.Exec(ctx, "BEGIN")
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			var n int
			err := b.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
			got <- err
		}()
		// b waits in the queue while a holds the only server.
		require.Never(t, func() bool { return len(got) > 0 }, 300*time.Millisecond, 20*time.Millisecond)
		_, err = a.Exec(ctx, "COMMIT")
		require.NoError(t, err)
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting client was not served")
		}
	})

	t.Run("garbage ends only its client", func(t *testing.T) {
		addr := start(t, 1)
		good := connect(t, addr, pgx.QueryExecModeSimpleProtocol)
		bad := connect(t, addr, pgx.QueryExecModeSimpleProtocol)
		nc := bad.PgConn().Conn()
		_, err := nc.Write([]byte{'Q', 0, 0, 0, 2}) // a length below four
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = nc.Read(make([]byte, 1))
		require.Error(t, err, "the floor closes a client it cannot follow")
		var one int
		require.NoError(t, good.QueryRow(ctx, "SELECT 1").Scan(&one))
		require.Equal(t, 1, one)
	})
}
