package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

// connect opens a pgx connection that uses unnamed statements: named
// prepared statements in transaction mode are tested with the prepared
// statements feature.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	dsn += " default_query_exec_mode=exec"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func pgErr(t *testing.T, err error) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	return pe
}

func backendPID(t *testing.T, c *pgx.Conn) int {
	t.Helper()
	var pid int
	require.NoError(t, c.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid))
	return pid
}

func TestAuthAndPassthrough(t *testing.T) {
	d := start(t, "", "transaction", 2)
	tests := []struct {
		name, user, password string
		wantUser             string
		wantCode             string
	}{
		{"scram client, scram passthrough to server", "app", "app-secret", "app", ""},
		{"md5 client, md5 hash passed to server", "app_md5", "md5-secret", "app_md5", ""},
		{"explicit server_username/server_password", "plain", "app-secret", "plain", ""},
		{"wrong scram password", "app", "nope", "", "28P01"},
		{"wrong md5 password", "app_md5", "nope", "", "28P01"},
		{"unknown user", "ghost", "x", "", "28P01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, d.DSN(tt.user, tt.password, "appdb"))
			if tt.wantCode != "" {
				require.Equal(t, tt.wantCode, pgErr(t, err).Code)
				return
			}
			require.NoError(t, err)
			defer c.Close(ctx)
			var user string
			require.NoError(t, c.QueryRow(ctx, "SELECT current_user").Scan(&user))
			require.Equal(t, tt.wantUser, user)
		})
	}
	t.Run("unknown database", func(t *testing.T) {
		_, err := pgx.Connect(context.Background(), d.DSN("app", "app-secret", "nodb"))
		require.Equal(t, "3D000", pgErr(t, err).Code)
	})
	t.Run("unix socket", func(t *testing.T) {
		c := connect(t, d.SocketDSN("app", "app-secret", "appdb"))
		var one int
		require.NoError(t, c.QueryRow(context.Background(), "SELECT 1").Scan(&one))
	})
}

func TestHBA(t *testing.T) {
	hba := `  pg_hba: |
    host appdb app_md5 127.0.0.1/32 reject
    host appdb plain 127.0.0.1/32 trust
    host all all 127.0.0.1/32 scram-sha-256
    local all all md5`
	d := start(t, hba, "transaction", 2)
	ctx := context.Background()

	_, err := pgx.Connect(ctx, d.DSN("app_md5", "md5-secret", "appdb"))
	require.Equal(t, "28000", pgErr(t, err).Code, "reject rule")
	require.Contains(t, err.Error(), "rejects connection")

	c, err := pgx.Connect(ctx, d.DSN("plain", "any-password-is-fine", "appdb"))
	require.NoError(t, err, "trust rule skips the password")
	c.Close(ctx)

	_, err = pgx.Connect(ctx, d.DSN("app", "wrong", "appdb"))
	require.Equal(t, "28P01", pgErr(t, err).Code)

	// md5 rule with a SCRAM verifier falls back to SCRAM, like PostgreSQL.
	c, err = pgx.Connect(ctx, d.SocketDSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	c.Close(ctx)
}

func TestTransactionModeSharesBackends(t *testing.T) {
	d := start(t, "", "transaction", 1)
	a := connect(t, d.DSN("app", "app-secret", "appdb"))
	b := connect(t, d.DSN("app", "app-secret", "appdb"))
	pa, pb := backendPID(t, a), backendPID(t, b)
	require.Equal(t, pa, pb, "pool_size 1: both clients use the one backend between transactions")

	ctx := context.Background()
	tx, err := a.Begin(ctx)
	require.NoError(t, err)
	got := make(chan int, 1)
	go func() {
		// b waits while a holds the only backend inside a transaction.
		var pid int
		_ = b.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
		got <- pid
	}()
	select {
	case <-got:
		t.Fatal("second client got the backend while the first was inside a transaction")
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, tx.Commit(ctx))
	select {
	case pid := <-got:
		require.Equal(t, pa, pid)
	case <-time.After(5 * time.Second):
		t.Fatal("second client was not served after the commit")
	}
}

func TestSessionModeKeepsBackend(t *testing.T) {
	d := start(t, "", "session", 2)
	a := connect(t, d.DSN("app", "app-secret", "appdb"))
	b := connect(t, d.DSN("app", "app-secret", "appdb"))
	pa := backendPID(t, a)
	ctx := context.Background()
	_, err := a.Exec(ctx, "SET application_name = 'session-a'")
	require.NoError(t, err)
	require.NotEqual(t, pa, backendPID(t, b), "session mode: one backend per client")
	require.Equal(t, pa, backendPID(t, a))
	var app string
	require.NoError(t, a.QueryRow(ctx, "SHOW application_name").Scan(&app))
	require.Equal(t, "session-a", app, "session state survives between transactions")
}

func TestCleanupResetsSessionState(t *testing.T) {
	d := start(t, "", "transaction", 1)
	a := connect(t, d.DSN("app", "app-secret", "appdb"))
	b := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx := context.Background()
	_, err := a.Exec(ctx, "SET statement_timeout = '123s'")
	require.NoError(t, err)
	var v string
	require.NoError(t, b.QueryRow(ctx, "SHOW statement_timeout").Scan(&v))
	require.Equal(t, "0", v, "a SET by one client does not leak to the next through the shared backend")
}

func TestSimpleProtocolCases(t *testing.T) {
	d := start(t, "", "transaction", 2)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	pc := c.PgConn()
	ctx := context.Background()

	res, err := pc.Exec(ctx, "SELECT 1; SELECT 2, 3; ").ReadAll()
	require.NoError(t, err)
	require.Len(t, res, 2, "multi-statement simple query")
	require.Equal(t, "3", string(res[1].Rows[0][1]))

	res, err = pc.Exec(ctx, "").ReadAll()
	require.NoError(t, err, "empty query")
	require.Len(t, res, 1)
	require.Empty(t, res[0].CommandTag.String())

	_, err = pc.Exec(ctx, "BEGIN; SELECT 1/0").ReadAll()
	require.Equal(t, "22012", pgErr(t, err).Code)
	_, err = pc.Exec(ctx, "SELECT 1").ReadAll()
	require.Equal(t, "25P02", pgErr(t, err).Code, "still in the failed transaction on the same backend")
	_, err = pc.Exec(ctx, "ROLLBACK").ReadAll()
	require.NoError(t, err)
	require.Equal(t, byte('I'), pc.TxStatus())

	// pooler_check_query is answered without a backend.
	res, err = pc.Exec(ctx, ";").ReadAll()
	require.NoError(t, err)
	require.Len(t, res, 1)

	var notice string
	cfg, err := pgconn.ParseConfig(d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notice = n.Message }
	nc, err := pgconn.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer nc.Close(ctx)
	_, err = nc.Exec(ctx, "DO $$ BEGIN RAISE NOTICE 'hello from plpgsql'; END $$").ReadAll()
	require.NoError(t, err)
	require.Equal(t, "hello from plpgsql", notice)
}

func TestExtendedPipelineWithSeveralSyncs(t *testing.T) {
	d := start(t, "", "transaction", 1)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx := context.Background()
	p := c.PgConn().StartPipeline(ctx)
	for i := 0; i < 3; i++ {
		p.SendQueryParams("SELECT $1::int + 1", [][]byte{[]byte(fmt.Sprint(i))}, nil, nil, nil)
		require.NoError(t, p.Sync())
	}
	p.SendQueryParams("SELECT 1/0", nil, nil, nil, nil)
	require.NoError(t, p.Sync())
	p.SendQueryParams("SELECT 42", nil, nil, nil, nil)
	require.NoError(t, p.Sync())

	for i := 0; i < 3; i++ {
		r, err := p.GetResults()
		require.NoError(t, err)
		rr := r.(*pgconn.ResultReader).Read()
		require.NoError(t, rr.Err)
		require.Equal(t, fmt.Sprint(i+1), string(rr.Rows[0][0]))
		r, err = p.GetResults()
		require.NoError(t, err)
		require.IsType(t, &pgconn.PipelineSync{}, r)
	}
	r, err := p.GetResults()
	if err == nil {
		err = r.(*pgconn.ResultReader).Read().Err
	}
	require.Equal(t, "22012", pgErr(t, err).Code)
	r, err = p.GetResults()
	require.NoError(t, err)
	require.IsType(t, &pgconn.PipelineSync{}, r)
	r, err = p.GetResults()
	require.NoError(t, err)
	rr := r.(*pgconn.ResultReader).Read()
	require.NoError(t, rr.Err, "work after the error in the same pipeline")
	require.Equal(t, "42", string(rr.Rows[0][0]))
	r, err = p.GetResults()
	require.NoError(t, err)
	require.IsType(t, &pgconn.PipelineSync{}, r)
	require.NoError(t, p.Close())

	// A pgx batch (one Sync) and a plain extended query afterwards.
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue("SELECT 'two'")
	br := c.SendBatch(ctx, b)
	var one int
	var two string
	require.NoError(t, br.QueryRow().Scan(&one))
	require.NoError(t, br.QueryRow().Scan(&two))
	require.NoError(t, br.Close())
	require.Equal(t, "two", two)
}

func TestCopyBothWays(t *testing.T) {
	d := start(t, "", "transaction", 1)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx := context.Background()
	_, err := c.Exec(ctx, "CREATE TEMP TABLE IF NOT EXISTS x (id int)")
	require.NoError(t, err)
	_, err = c.Exec(ctx, "DROP TABLE IF EXISTS copy_t; CREATE TABLE copy_t (id int, note text)")
	require.NoError(t, err)
	var in bytes.Buffer
	for i := 0; i < 50000; i++ {
		fmt.Fprintf(&in, "%d\trow %d\n", i, i)
	}
	tag, err := c.PgConn().CopyFrom(ctx, bytes.NewReader(in.Bytes()), "COPY copy_t FROM STDIN")
	require.NoError(t, err)
	require.EqualValues(t, 50000, tag.RowsAffected())
	var out bytes.Buffer
	tag, err = c.PgConn().CopyTo(ctx, &out, "COPY (SELECT * FROM copy_t ORDER BY id) TO STDOUT")
	require.NoError(t, err)
	require.EqualValues(t, 50000, tag.RowsAffected())
	require.Equal(t, in.String(), out.String())

	// A COPY that fails on the server leaves the connection usable.
	_, err = c.PgConn().CopyFrom(ctx, strings.NewReader("not-a-number\tx\n"), "COPY copy_t FROM STDIN")
	require.Equal(t, "22P02", pgErr(t, err).Code)
	var n int
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM copy_t").Scan(&n))
	require.Equal(t, 50000, n)
}

func TestLargeRow(t *testing.T) {
	d := start(t, "", "transaction", 1)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx := context.Background()
	const size = 5 << 20
	var s string
	require.NoError(t, c.QueryRow(ctx, "SELECT repeat('x', $1)", size).Scan(&s))
	require.Len(t, s, size)
	// and a 5 MB parameter the other way
	big := strings.Repeat("y", size)
	var n int
	require.NoError(t, c.QueryRow(ctx, "SELECT length($1::text)", big).Scan(&n))
	require.Equal(t, size, n)
}

func TestCancelRequest(t *testing.T) {
	d := start(t, "", "transaction", 2)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Exec(ctx, "SELECT pg_sleep(30)")
	require.Error(t, err)
	require.Less(t, time.Since(start), 10*time.Second, "the cancel reached the backend")
	// pgx closes the connection after a context cancel; the backend must
	// have been cancelled (not left sleeping): check pg_stat_activity.
	require.Eventually(t, func() bool {
		return pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'") == 0
	}, 5*time.Second, 20*time.Millisecond)

	// With pgconn and an explicit CancelRequest the connection stays usable.
	pc, err := pgconn.Connect(context.Background(), d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer pc.Close(context.Background())
	done := make(chan error, 1)
	go func() { _, err := pc.Exec(context.Background(), "SELECT pg_sleep(30)").ReadAll(); done <- err }()
	require.Eventually(t, func() bool {
		return pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'") == 1
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, pc.CancelRequest(context.Background()))
	select {
	case err := <-done:
		require.Equal(t, "57014", pgErr(t, err).Code)
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not interrupt pg_sleep")
	}
	res, err := pc.Exec(context.Background(), "SELECT 7").ReadAll()
	require.NoError(t, err)
	require.Equal(t, "7", string(res[0].Rows[0][0]))
}

func TestBackendKilledInsideTransaction(t *testing.T) {
	d := start(t, "", "transaction", 2)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	pg.KillBackend(t, pid)
	// The client is idle in transaction; the pooler notices the dead
	// backend at once and tells the client, who sees it on its next read.
	start := time.Now()
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = tx.Exec(qctx, "SELECT 1")
	require.Error(t, err)
	require.Less(t, time.Since(start), time.Second, "client errors within 1 s")
	require.False(t, errors.Is(err, context.DeadlineExceeded))

	// New clients get a working backend (PostgreSQL restarted the others
	// after the crash of a backend; the pool recovers).
	require.Eventually(t, func() bool {
		c2, err := pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
		if err != nil {
			return false
		}
		defer c2.Close(ctx)
		var one int
		return c2.QueryRow(ctx, "SELECT 1").Scan(&one) == nil && one == 1
	}, 15*time.Second, 100*time.Millisecond)
}

func TestQueryWaitTimeout(t *testing.T) {
	d := start(t, "  query_wait_timeout: 300ms", "transaction", 1)
	a := connect(t, d.DSN("app", "app-secret", "appdb"))
	b := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx := context.Background()
	tx, err := a.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	start := time.Now()
	_, err = b.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.Contains(t, err.Error(), "query_wait_timeout")
	require.Less(t, time.Since(start), 3*time.Second)
}

func TestManyClientsSmallPool(t *testing.T) {
	d := start(t, "  query_wait_timeout: 60s", "transaction", 4)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Named prepared statements in transaction mode are the
			// prepared-statements issue; here pgx uses unnamed ones.
			c, err := pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb")+" default_query_exec_mode=exec")
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			for j := 0; j < 50; j++ {
				var got int
				if err := c.QueryRow(ctx, "SELECT $1::int", i*1000+j).Scan(&got); err != nil {
					errs <- err
					return
				}
				if got != i*1000+j {
					errs <- fmt.Errorf("client %d got %d, want %d", i, got, i*1000+j)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.LessOrEqual(t, len(pg.BackendPIDs(t, "app")), 4+1, "pool_size bounds the backends")
}

func TestSyncServerParameters(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			d := start(t, fmt.Sprintf("  sync_server_parameters: %v", sync), "transaction", 1)
			tokyo := connect(t, d.DSN("app", "app-secret", "appdb")+" timezone=Asia/Tokyo application_name=tokyo")
			utc := connect(t, d.DSN("app", "app-secret", "appdb")+" timezone=UTC application_name=utc")
			ctx := context.Background()
			var tz, app string
			require.NoError(t, utc.QueryRow(ctx, "SELECT current_setting('TimeZone'), current_setting('application_name')").Scan(&tz, &app))
			require.NoError(t, tokyo.QueryRow(ctx, "SELECT current_setting('TimeZone'), current_setting('application_name')").Scan(&tz, &app))
			if sync {
				require.Equal(t, "Asia/Tokyo", tz, "the one shared backend was switched to this client's TimeZone")
				require.Equal(t, "tokyo", app)
				require.NoError(t, utc.QueryRow(ctx, "SELECT current_setting('TimeZone')").Scan(&tz))
				require.Equal(t, "UTC", tz)
			} else {
				require.NotEqual(t, "Asia/Tokyo", tz, "without sync the server keeps its own TimeZone")
				require.Equal(t, "tokyo", app, "application_name follows the client even without sync")
			}
		})
	}
}

func TestFunctionCallForwarded(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer c.Close(ctx)
	var oid uint32
	res, err := c.Exec(ctx, "SELECT 'int4pl'::regproc::oid").ReadAll()
	require.NoError(t, err)
	_, err = fmt.Sscan(string(res[0].Rows[0][0]), &oid)
	require.NoError(t, err)
	for i := 0; i < 3; i++ { // the backend is released after each call
		fe := c.Frontend()
		fe.Send(&pgproto3.FunctionCall{Function: oid, ArgFormatCodes: []uint16{0}, Arguments: [][]byte{[]byte("40"), []byte(fmt.Sprint(i))}, ResultFormatCode: 0})
		require.NoError(t, fe.Flush())
		var got string
		for {
			msg, err := fe.Receive()
			require.NoError(t, err)
			if r, ok := msg.(*pgproto3.FunctionCallResponse); ok {
				got = string(r.Result)
			}
			if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
		require.Equal(t, fmt.Sprint(40+i), got, "FunctionCall ('F', PgJDBC's LargeObject API) goes through like a query")
	}
	res, err = c.Exec(ctx, "SELECT 1").ReadAll()
	require.NoError(t, err)
	require.Len(t, res, 1)
}

// dialRaw logs in as app over a TCP connection the test keeps, so that it
// can reset it.
func dialRaw(t *testing.T, d *apptest.Instance) (net.Conn, *pgconn.PgConn) {
	t.Helper()
	raw, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port))
	require.NoError(t, err)
	cfg, err := pgconn.ParseConfig(d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	cfg.DialFunc = func(context.Context, string, string) (net.Conn, error) { return raw, nil }
	c, err := pgconn.ConnectConfig(context.Background(), cfg)
	require.NoError(t, err)
	return raw, c
}

func TestClientResetMidResultFreesBackend(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	raw, c := dialRaw(t, d)
	// A large result; the client reads a little of it and resets.
	rr := c.Exec(ctx, "SELECT repeat('x', 1000) FROM generate_series(1, 200000)")
	_ = rr
	buf := make([]byte, 64<<10)
	_, _ = raw.Read(buf)
	require.NoError(t, raw.(*net.TCPConn).SetLinger(0))
	require.NoError(t, raw.Close()) // RST
	// The only backend must come back to the pool for the next client.
	next := connect(t, d.DSN("app", "app-secret", "appdb"))
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	require.NoError(t, next.QueryRow(qctx, "SELECT 1").Scan(&one))
	p, _ := d.Daemon.Pools.Lookup("appdb", "app")
	require.Eventually(t, func() bool { return p.Conns().Stats().Busy == 0 }, 2*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return tlMetric(t, d, "pg_doorman_client_write_failures_total", "server", "closed") == 1
	}, 2*time.Second, 10*time.Millisecond)
}

// A client that resets while its transaction runs: the answer cannot be
// written, but the server connection went back clean at ReadyForQuery
// before the write (readyForQuery, handFirst), so the next client gets the
// same backend instead of a new one.
func TestClientResetBeforeAnswerKeepsBackend(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	before := connect(t, d.DSN("app", "app-secret", "appdb"))
	pid := backendPID(t, before)
	require.NoError(t, before.Close(ctx))

	raw, c := dialRaw(t, d)
	c.Exec(ctx, "SELECT pg_sleep(0.3)") // written now, read never
	p, _ := d.Daemon.Pools.Lookup("appdb", "app")
	require.Eventually(t, func() bool { return p.Conns().Stats().Busy == 1 }, 2*time.Second, time.Millisecond)
	require.NoError(t, raw.(*net.TCPConn).SetLinger(0))
	require.NoError(t, raw.Close()) // RST while the server works
	require.Eventually(t, func() bool { return p.Conns().Stats().Busy == 0 }, 3*time.Second, 10*time.Millisecond)

	next := connect(t, d.DSN("app", "app-secret", "appdb"))
	require.Equal(t, pid, backendPID(t, next), "the backend served the next client")
	require.Len(t, pg.BackendPIDs(t, "app"), 1)
	require.Eventually(t, func() bool {
		return tlMetric(t, d, "pg_doorman_client_write_failures_total", "server", "kept") == 1
	}, 2*time.Second, 10*time.Millisecond)
	require.Zero(t, tlMetric(t, d, "pg_doorman_client_write_failures_total", "server", "closed"))
}
