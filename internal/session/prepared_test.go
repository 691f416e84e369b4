package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// cached connects with pgx's default statement cache: every query is a
// named prepared statement, reused on later calls.
func cached(t *testing.T, dsn string, extra string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn+" "+extra)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// runConcurrently runs n clients, each doing f, and fails on any error.
func runConcurrently(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := f(i); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPreparedPgxModes(t *testing.T) {
	d := start(t, bothBackends, "transaction", 2)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec"} {
		t.Run(mode, func(t *testing.T) {
			runConcurrently(t, 12, func(i int) error {
				ctx := context.Background()
				c, err := pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb")+" default_query_exec_mode="+mode)
				if err != nil {
					return err
				}
				defer c.Close(ctx)
				for j := 0; j < 30; j++ {
					var got int
					var s string
					if err := c.QueryRow(ctx, "SELECT $1::int * 2, $2::text", i*100+j, "x").Scan(&got, &s); err != nil {
						return err
					}
					if got != 2*(i*100+j) {
						return fmt.Errorf("got %d want %d", got, 2*(i*100+j))
					}
					b := &pgx.Batch{}
					b.Queue("SELECT $1::int + 1", j)
					b.Queue("SELECT count(*) FROM items WHERE id > $1", -1)
					br := c.SendBatch(ctx, b)
					var one int
					var cnt int64
					if err := br.QueryRow().Scan(&one); err != nil {
						return err
					}
					if err := br.QueryRow().Scan(&cnt); err != nil {
						return err
					}
					if err := br.Close(); err != nil {
						return err
					}
					if one != j+1 {
						return fmt.Errorf("batch got %d", one)
					}
				}
				return nil
			})
		})
	}
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	require.Greater(t, p.Stats.PreparedHits.Load(), uint64(0), "clients shared cached statements")
	require.Greater(t, p.Stats.PreparedInjected.Load(), uint64(0), "statements moved between the 2 backends")

	// SHOW PREPARED_STATEMENTS lists the pool cache.
	admin := cached(t, d.DSN("admin", "admin-secret", "pgdoorman"), "default_query_exec_mode=simple_protocol")
	rows, err := admin.Query(context.Background(), "SHOW PREPARED_STATEMENTS")
	require.NoError(t, err)
	found := false
	for rows.Next() {
		v, err := rows.Values()
		require.NoError(t, err)
		if v[3] == "SELECT $1::int * 2, $2::text" {
			found = true
			require.EqualValues(t, 1, v[5], "verified")
		}
	}
	require.NoError(t, rows.Err())
	require.True(t, found, "the statement is listed")
}

func TestPreparedSameNameDifferentSQL(t *testing.T) {
	d := start(t, "", "transaction", 2)
	runConcurrently(t, 10, func(i int) error {
		ctx := context.Background()
		c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		// Every client calls its statement "s1", each with different SQL.
		if _, err := c.Prepare(ctx, "s1", fmt.Sprintf("SELECT %d + $1::int", i*1000), nil); err != nil {
			return err
		}
		for j := 0; j < 40; j++ {
			r := c.ExecPrepared(ctx, "s1", [][]byte{[]byte(fmt.Sprint(j))}, nil, nil).Read()
			if r.Err != nil {
				return r.Err
			}
			if want := fmt.Sprint(i*1000 + j); string(r.Rows[0][0]) != want {
				return fmt.Errorf("got %s, want %s", r.Rows[0][0], want)
			}
		}
		return nil
	})
}

func TestPreparedErrorInPipelineThenMoreWork(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer c.Close(ctx)
	p := c.StartPipeline(ctx)
	p.SendPrepare("ok1", "SELECT 1", nil)
	p.SendQueryParams("SELECT 1/0", nil, nil, nil, nil)
	p.SendPrepare("skipped", "SELECT 2", nil) // skipped by PostgreSQL after the error
	require.NoError(t, p.Sync())
	p.SendPrepare("after", "SELECT 3", nil)
	require.NoError(t, p.Sync())
	r, err := p.GetResults()
	require.NoError(t, err)
	require.IsType(t, &pgconn.StatementDescription{}, r)
	r, err = p.GetResults()
	if err == nil {
		err = r.(*pgconn.ResultReader).Read().Err
	}
	require.Equal(t, "22012", pgErr(t, err).Code)
	r, err = p.GetResults()
	require.NoError(t, err)
	require.IsType(t, &pgconn.PipelineSync{}, r)
	r, err = p.GetResults()
	require.NoError(t, err)
	require.IsType(t, &pgconn.StatementDescription{}, r)
	r, err = p.GetResults()
	require.NoError(t, err)
	require.IsType(t, &pgconn.PipelineSync{}, r)
	require.NoError(t, p.Close())

	res := c.ExecPrepared(ctx, "ok1", nil, nil, nil).Read()
	require.NoError(t, res.Err)
	require.Equal(t, "1", string(res.Rows[0][0]))
	res = c.ExecPrepared(ctx, "after", nil, nil, nil).Read()
	require.NoError(t, res.Err)
	require.Equal(t, "3", string(res.Rows[0][0]))
	res = c.ExecPrepared(ctx, "skipped", nil, nil, nil).Read()
	require.Equal(t, "26000", pgErr(t, res.Err).Code, "a Parse skipped after an error does not exist, like in PostgreSQL")
}

func TestPreparedUnknownStatementIs26000(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer c.Close(ctx)
	res := c.ExecPrepared(ctx, "nope", nil, nil, nil).Read()
	require.Equal(t, "26000", pgErr(t, res.Err).Code)
	_, err = c.Prepare(ctx, "dup", "SELECT 1", nil)
	require.NoError(t, err)
	_, err = c.Prepare(ctx, "dup", "SELECT 2", nil)
	require.Equal(t, "42P05", pgErr(t, err).Code, "redefining a name fails like in PostgreSQL")
	// Close then reuse of the name works.
	require.NoError(t, c.Deallocate(ctx, "dup"))
	_, err = c.Prepare(ctx, "dup", "SELECT 2", nil)
	require.NoError(t, err)
	res = c.ExecPrepared(ctx, "dup", nil, nil, nil).Read()
	require.NoError(t, res.Err)
	require.Equal(t, "2", string(res.Rows[0][0]))
}

func TestPreparedDiscardAllThenReuse(t *testing.T) {
	d := start(t, "", "transaction", 2)
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer c.Close(ctx)
	_, err = c.Prepare(ctx, "a", "SELECT 'first'", nil)
	require.NoError(t, err)
	for _, q := range []string{"DISCARD ALL", "DEALLOCATE ALL"} {
		_, err = c.Exec(ctx, q).ReadAll()
		require.NoError(t, err)
		res := c.ExecPrepared(ctx, "a", nil, nil, nil).Read()
		require.Equal(t, "26000", pgErr(t, res.Err).Code, "%s forgets the client's statements", q)
		_, err = c.Prepare(ctx, "a", "SELECT 'second'", nil)
		require.NoError(t, err, "the name can be used again after %s", q)
		res = c.ExecPrepared(ctx, "a", nil, nil, nil).Read()
		require.NoError(t, res.Err)
		require.Equal(t, "second", string(res.Rows[0][0]))
	}
}

func TestPreparedFlushOnlyParseOfCachedStatement(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	a, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer a.Close(ctx)
	_, err = a.Prepare(ctx, "x", "SELECT 41 + 1", nil)
	require.NoError(t, err)
	// Another client prepares the same SQL: the server already has it, so
	// the pooler answers ParseComplete itself. pgconn's Prepare sends
	// Parse, Describe, Sync; the Describe goes to the server.
	b, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer b.Close(ctx)
	sd, err := b.Prepare(ctx, "y", "SELECT 41 + 1", nil)
	require.NoError(t, err)
	require.Len(t, sd.Fields, 1)
	res := b.ExecPrepared(ctx, "y", nil, nil, nil).Read()
	require.NoError(t, res.Err)
	require.Equal(t, "42", string(res.Rows[0][0]))
	// Parse + Flush only (no Sync): the client waits for ParseComplete.
	p := b.StartPipeline(ctx)
	p.SendPrepare("z", "SELECT 41 + 1", nil)
	require.NoError(t, p.Flush())
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := p.GetResults(); done <- err }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-fctx.Done():
		t.Fatal("no ParseComplete for a cached Parse followed by Flush")
	}
	require.NoError(t, p.Sync())
	_, _ = p.GetResults()
	require.NoError(t, p.Close())
}

func TestPreparedManyStatementsClientCap(t *testing.T) {
	d := start(t, "  client_prepared_statements_cache_size: 100\n  prepared_statements_cache_size: 500", "transaction", 2)
	ctx := context.Background()
	c := cached(t, d.DSN("app", "app-secret", "appdb"), "statement_cache_capacity=100")
	for i := 0; i < 10000; i++ {
		var got int
		require.NoError(t, c.QueryRow(ctx, fmt.Sprintf("SELECT $1::int + %d", i), 1).Scan(&got))
		require.Equal(t, i+1, got)
	}
	p, _ := d.Daemon.Pools.Lookup("appdb", "app")
	require.LessOrEqual(t, p.Statements.Stats().Size, 500, "pool cache bounded")
	require.Greater(t, p.Stats.PreparedClientEvictions.Load(), uint64(9000), "client map bounded at 100")
	// Server-side statements stay bounded too (Close on eviction);
	// pg_prepared_statements is per session, so ask through the pooler.
	var onServer int
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements").Scan(&onServer))
	require.LessOrEqual(t, onServer, 501, "statements prepared on one backend are bounded by prepared_statements_cache_size")
}

func TestPreparedDisabledAndSessionModePassThrough(t *testing.T) {
	for _, tc := range []struct{ name, general, mode string }{
		{"prepared_statements false in transaction mode", "  prepared_statements: false", "transaction"},
		{"session mode", "", "session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := start(t, tc.general, tc.mode, 1) // one backend: the next query sees what Prepare did
			c := cached(t, d.DSN("app", "app-secret", "appdb"), "")
			var name string
			_, err := c.Prepare(context.Background(), "mine", "SELECT 1")
			require.NoError(t, err)
			require.NoError(t, c.QueryRow(context.Background(), "SELECT name FROM pg_prepared_statements WHERE name = 'mine'").Scan(&name))
			require.Equal(t, "mine", name, "the client's own name reaches the server")
		})
	}
}

func TestPreparedSimpleQueryPrepareInsideTransaction(t *testing.T) {
	d := start(t, "", "transaction", 2)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "PREPARE p1 AS SELECT 5")
	require.NoError(t, err)
	var v int
	require.NoError(t, tx.QueryRow(ctx, "EXECUTE p1").Scan(&v))
	require.Equal(t, 5, v, "SQL PREPARE/EXECUTE work inside one transaction")
	require.NoError(t, tx.Commit(ctx))
	// After the transaction the backend was cleaned (DEALLOCATE ALL): the
	// documented limit of SQL-level PREPARE in transaction mode.
	err = c.QueryRow(ctx, "EXECUTE p1").Scan(&v)
	require.Equal(t, "26000", pgErr(t, err).Code)
}

func TestPreparedLibPQ(t *testing.T) {
	d := start(t, "", "transaction", 2)
	db, err := sql.Open("postgres", d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(12)
	stmt, err := db.Prepare("SELECT $1::int * 3")
	require.NoError(t, err)
	defer stmt.Close()
	runConcurrently(t, 12, func(i int) error {
		for j := 0; j < 30; j++ {
			var got int
			if err := stmt.QueryRow(i*100 + j).Scan(&got); err != nil {
				return err
			}
			if got != 3*(i*100+j) {
				return fmt.Errorf("got %d", got)
			}
			if err := db.QueryRow("SELECT $1::text || 'x'", "a").Scan(new(string)); err != nil {
				return err
			}
		}
		return nil
	})
}

var failedRE = regexp.MustCompile(`number of failed transactions: (\d+)`)

func TestPreparedPgbench(t *testing.T) {
	pgbench, err := pgtest.FindBinary("pgbench")
	require.NoError(t, err)
	d := start(t, "  query_wait_timeout: 30s", "transaction", 10)
	env := append(os.Environ(), "PGPASSWORD=app-secret")
	init := exec.Command(pgbench, "-i", "-s", "1", "-q", "-h", "127.0.0.1", "-p", fmt.Sprint(d.Port), "-U", "app", "appdb")
	init.Env = env
	out, err := init.CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(pgbench, "-n", "-c", "100", "-j", "4", "-T", "5", "-M", "prepared",
		"-h", "127.0.0.1", "-p", fmt.Sprint(d.Port), "-U", "app", "appdb")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	m := failedRE.FindStringSubmatch(string(out))
	require.NotNil(t, m, string(out))
	require.Equal(t, "0", m[1], string(out))
}
