package session_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// ppStart starts pg_doorman in front of the package's PostgreSQL (or of
// serverPort when not 0) with poolExtra added to the pool's section.
func ppStart(t *testing.T, extraGeneral, mode string, size int, poolExtra string, serverPort int) *apptest.Instance {
	t.Helper()
	cfg := poolConfig(t, extraGeneral, mode, size)
	if poolExtra != "" {
		cfg = strings.Replace(cfg, "    pool_mode: ", "    "+poolExtra+"\n    pool_mode: ", 1)
	}
	if serverPort != 0 {
		cfg = strings.Replace(cfg, fmt.Sprintf("server_port: %d", pg.Port), fmt.Sprintf("server_port: %d", serverPort), 1)
	}
	return apptest.Start(t, cfg)
}

func ppConnect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// ppActivityAppName reads, on a direct connection, the application_name
// pg_stat_activity shows for backend pid.
func ppActivityAppName(t *testing.T, direct *pgx.Conn, pid int) string {
	t.Helper()
	var app string
	require.NoError(t, direct.QueryRow(context.Background(),
		"SELECT application_name FROM pg_stat_activity WHERE pid = $1", pid).Scan(&app))
	return app
}

func ppSyncFailures(t *testing.T, d *apptest.Instance, param string) float64 {
	t.Helper()
	return counterValue(t, d, "pg_doorman_server_parameter_sync_failures_total", "parameter", param)
}

// Two clients with distinct names alternate on the one backend of a
// pool_size 1 pool: each sees its own name, in SHOW and in
// pg_stat_activity, so it is set per transaction, with and without
// sync_server_parameters, in both protocols pgx speaks.
func TestAppNameFollowsClientTransactionMode(t *testing.T) {
	modes := []struct {
		name string
		mode pgx.QueryExecMode
	}{
		{"extended, cached statements", pgx.QueryExecModeCacheStatement},
		{"extended, unnamed", pgx.QueryExecModeExec},
		{"simple protocol", pgx.QueryExecModeSimpleProtocol},
	}
	direct := ppConnect(t, pg.SuperDSN("postgres"))
	for _, sync := range []bool{false, true} {
		for _, m := range modes {
			t.Run(fmt.Sprintf("sync=%v/%s", sync, m.name), func(t *testing.T) {
				d := ppStart(t, fmt.Sprintf("  sync_server_parameters: %v", sync), "transaction", 1, "", 0)
				dsn := d.DSN("app", "app-secret", "appdb")
				mode := map[pgx.QueryExecMode]string{
					pgx.QueryExecModeCacheStatement: "cache_statement",
					pgx.QueryExecModeExec:           "exec",
					pgx.QueryExecModeSimpleProtocol: "simple_protocol",
				}[m.mode]
				clients := map[string]*pgx.Conn{}
				for _, name := range []string{"pp-alpha", "pp-beta"} {
					clients[name] = ppConnect(t, dsn+" application_name="+name+" default_query_exec_mode="+mode)
				}
				ctx := context.Background()
				pids := map[int]bool{}
				for i := 0; i < 4; i++ {
					for _, name := range []string{"pp-alpha", "pp-beta"} {
						c := clients[name]
						var got string
						require.NoError(t, c.QueryRow(ctx, "SHOW application_name").Scan(&got))
						require.Equal(t, name, got, "round %d", i)
						tx, err := c.Begin(ctx)
						require.NoError(t, err)
						var pid int
						require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
						pids[pid] = true
						require.Equal(t, name, ppActivityAppName(t, direct, pid), "pg_stat_activity during the transaction")
						require.NoError(t, tx.Commit(ctx))
					}
				}
				require.Len(t, pids, 1, "pool_size 1: both clients share one backend")
			})
		}
	}
}

// psql runs, each a session of its own, alternate with a pgx client on the
// same backend.
func TestAppNamePsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql is needed: apt-get install postgresql-client")
	d := ppStart(t, "", "transaction", 1, "", 0)
	other := ppConnect(t, d.DSN("app", "app-secret", "appdb")+" application_name=pp-other")
	ctx := context.Background()
	for _, name := range []string{"pp-psql-1", "pp-psql-2", "pp-psql-1"} {
		out, err := exec.CommandContext(ctx, psql, "-X", "-A", "-t",
			d.DSN("app", "app-secret", "appdb")+" application_name="+name,
			"-c", "show application_name").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, name, strings.TrimSpace(string(out)))
		var got string
		require.NoError(t, other.QueryRow(ctx, "SHOW application_name").Scan(&got))
		require.Equal(t, "pp-other", got)
	}
}

// A client without application_name gets the pool's application_name (or
// none), never the name the previous client left on the backend.
func TestAppNameDefaultWhenClientSetsNone(t *testing.T) {
	tests := []struct {
		name, poolExtra, want string
	}{
		{"no pool application_name", "", ""},
		{"pool application_name", "application_name: pp-pool", "pp-pool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ppStart(t, "", "transaction", 1, tt.poolExtra, 0)
			named := ppConnect(t, d.DSN("app", "app-secret", "appdb")+" application_name=pp-named")
			anon := ppConnect(t, d.DSN("app", "app-secret", "appdb"))
			ctx := context.Background()
			for i := 0; i < 2; i++ {
				var got string
				require.NoError(t, named.QueryRow(ctx, "SHOW application_name").Scan(&got))
				require.Equal(t, "pp-named", got)
				require.NoError(t, anon.QueryRow(ctx, "SHOW application_name").Scan(&got))
				require.Equal(t, tt.want, got, "the anonymous client does not inherit pp-named")
			}
		})
	}
}

// Session mode: the backend is the client's for the session and carries
// its application_name from the first query; a SET by the client stays.
func TestAppNameSessionMode(t *testing.T) {
	d := ppStart(t, "", "session", 1, "", 0)
	direct := ppConnect(t, pg.SuperDSN("postgres"))
	ctx := context.Background()
	for _, name := range []string{"pp-sess-1", "pp-sess-2"} {
		c := ppConnect(t, d.DSN("app", "app-secret", "appdb")+" application_name="+name)
		var got string
		var pid int
		require.NoError(t, c.QueryRow(ctx, "SELECT current_setting('application_name'), pg_backend_pid()").Scan(&got, &pid))
		require.Equal(t, name, got)
		require.Equal(t, name, ppActivityAppName(t, direct, pid))
		_, err := c.Exec(ctx, "SET application_name = 'pp-sess-set'")
		require.NoError(t, err)
		require.NoError(t, c.QueryRow(ctx, "SHOW application_name").Scan(&got))
		require.Equal(t, "pp-sess-set", got)
		require.NoError(t, c.Close(ctx))
	}
}

// A TimeZone the server rejects: the client's queries work, the failure is
// counted once and the SET is not tried again; application_name, set in a
// Query of its own, still arrives.
func TestParamSyncFailureIsSwallowed(t *testing.T) {
	d := ppStart(t, "  sync_server_parameters: true", "transaction", 1, "", 0)
	dsn := d.DSN("app", "app-secret", "appdb")
	bad := ppConnect(t, dsn+" application_name=pp-bad timezone=Invalid/Zone")
	good := ppConnect(t, dsn+" application_name=pp-good timezone=Asia/Tokyo")
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		var app, tz string
		require.NoError(t, bad.QueryRow(ctx, "SELECT current_setting('application_name'), current_setting('TimeZone')").Scan(&app, &tz))
		require.Equal(t, "pp-bad", app)
		require.NotEqual(t, "Invalid/Zone", tz)
		var n int
		require.NoError(t, bad.QueryRow(ctx, "SELECT $1::int + 1", i).Scan(&n), "extended protocol after the failed SET")
		require.Equal(t, i+1, n)
		require.NoError(t, good.QueryRow(ctx, "SELECT current_setting('application_name'), current_setting('TimeZone')").Scan(&app, &tz))
		require.Equal(t, "pp-good", app)
		require.Equal(t, "Asia/Tokyo", tz)
	}
	require.Equal(t, 1.0, ppSyncFailures(t, d, "TimeZone"), "counted once: not retried for that session")
}

// With prepared statements (on by default in transaction mode) cached
// statements of clients with distinct names interleave on one backend and
// every answer reaches the right client.
func TestParamSyncWithPreparedStatements(t *testing.T) {
	d := ppStart(t, "  sync_server_parameters: true", "transaction", 1, "", 0)
	dsn := d.DSN("app", "app-secret", "appdb")
	names := []string{"pp-p1", "pp-p2", "pp-p3"}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for ci, name := range names {
		c := ppConnect(t, dsn+" application_name="+name+" timezone=Etc/GMT-"+fmt.Sprint(ci+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- ppPreparedRounds(c, name, ci)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func ppPreparedRounds(c *pgx.Conn, name string, ci int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 30; i++ {
		var app, tz string
		var n int
		if err := c.QueryRow(ctx, "SELECT current_setting('application_name'), current_setting('TimeZone'), $1::int * 2", i).Scan(&app, &tz, &n); err != nil {
			return err
		}
		if app != name || tz != fmt.Sprintf("Etc/GMT-%d", ci+1) || n != 2*i {
			return fmt.Errorf("%s round %d: got %q %q %d", name, i, app, tz, n)
		}
		if err := c.QueryRow(ctx, "SELECT $1::text || current_setting('application_name')", "x").Scan(&app); err != nil {
			return err
		}
		if app != "x"+name {
			return fmt.Errorf("%s round %d: got %q", name, i, app)
		}
	}
	return nil
}

// ppCountingProxy forwards TCP to PostgreSQL and counts the reads from
// pg_doorman's side: one read is one write by pg_doorman on loopback.
type ppCountingProxy struct {
	ln    net.Listener
	reads atomic.Int64
}

func ppStartProxy(t *testing.T) *ppCountingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &ppCountingProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go p.accept()
	return p
}

func (p *ppCountingProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *ppCountingProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", pg.Addr())
		if err != nil {
			_ = c.Close()
			continue
		}
		go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
		go func() {
			b := make([]byte, 64<<10)
			for {
				n, err := c.Read(b)
				if n > 0 {
					p.reads.Add(1)
					if _, err := s.Write(b[:n]); err != nil {
						return
					}
				}
				if err != nil {
					_ = s.Close()
					return
				}
			}
		}()
	}
}

// No extra round trip: while two raw clients with distinct names alternate
// on one backend, pg_doorman writes to the server once per client Query
// (the SET rides in the same write), and the client gets exactly the
// replies to its own Query: one ReadyForQuery, no ParameterStatus.
func TestParamSyncNoExtraRoundTrip(t *testing.T) {
	proxy := ppStartProxy(t)
	d := ppStart(t, "  sync_server_parameters: true", "transaction", 1, "", proxy.port())
	ctx := context.Background()
	names := []string{"pp-raw-1", "pp-raw-2"}
	conns := map[string]*pgconn.PgConn{}
	for i, name := range names {
		c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb")+" application_name="+name+
			fmt.Sprintf(" timezone=Etc/GMT+%d", i+1))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		conns[name] = c
	}
	for round := 0; round < 4; round++ {
		for _, name := range names {
			before := proxy.reads.Load()
			got := ppRawQuery(t, conns[name], "SELECT current_setting('application_name')")
			require.Equal(t, []string{"RowDescription", "DataRow:" + name, "CommandComplete", "ReadyForQuery"}, got, "round %d", round)
			require.Equal(t, int64(1), proxy.reads.Load()-before, "one write to the server for the transaction, round %d", round)
		}
	}
}

// ppRawQuery sends one simple Query and names every message received up to
// and including the first ReadyForQuery.
func ppRawQuery(t *testing.T, c *pgconn.PgConn, sql string) []string {
	t.Helper()
	fe := c.Frontend()
	fe.Send(&pgproto3.Query{String: sql})
	require.NoError(t, fe.Flush())
	require.NoError(t, c.Conn().SetReadDeadline(time.Now().Add(10*time.Second)))
	defer func() { _ = c.Conn().SetReadDeadline(time.Time{}) }()
	var got []string
	for {
		m, err := fe.Receive()
		require.NoError(t, err)
		name := fmt.Sprintf("%T", m)
		name = name[strings.LastIndexByte(name, '.')+1:]
		if dr, ok := m.(*pgproto3.DataRow); ok {
			name += ":" + string(bytes.Join(dr.Values, []byte(",")))
		}
		got = append(got, name)
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			return got
		}
	}
}

// Values with a quote and a backslash reach the server intact, also when
// the client's standard_conforming_strings=off is set on the server before
// its application_name; the next client gets its own settings back.
func TestAppNameQuoting(t *testing.T) {
	d := ppStart(t, "  sync_server_parameters: true", "transaction", 1, "", 0)
	ctx := context.Background()
	odd := `pp-o'q\x`
	clients := map[string]*pgconn.PgConn{}
	for name, scs := range map[string]string{odd: "off", "pp-plain": "on"} {
		cfg, err := pgconn.ParseConfig(d.DSN("app", "app-secret", "appdb"))
		require.NoError(t, err)
		cfg.RuntimeParams["application_name"] = name
		cfg.RuntimeParams["standard_conforming_strings"] = scs
		c, err := pgconn.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		clients[name] = c
	}
	want := map[string]string{odd: "off", "pp-plain": "on"}
	for i := 0; i < 2; i++ {
		for _, name := range []string{odd, "pp-plain"} {
			res, err := clients[name].Exec(ctx, "SELECT current_setting('application_name'), current_setting('standard_conforming_strings')").ReadAll()
			require.NoError(t, err)
			require.Len(t, res, 1)
			require.NoError(t, res[0].Err)
			row := res[0].Rows[0]
			require.Equal(t, name, string(row[0]))
			require.Equal(t, want[name], string(row[1]))
		}
	}
}

// TestParamSyncSharedSnapshot: clients told the same values share one
// snapshot, and a server found in sync with it is not checked again
// (syncParams) until it reports a ParameterStatus. A client that changes
// its application_name on that server makes the next client of the
// snapshot get its own value back, and the other way round.
func TestParamSyncSharedSnapshot(t *testing.T) {
	d := ppStart(t, "", "transaction", 1, "", 0)
	dsn := d.DSN("app", "app-secret", "appdb")
	direct := ppConnect(t, pg.SuperDSN("postgres"))
	ctx := context.Background()
	same1 := ppConnect(t, dsn+" application_name=pp-same")
	same2 := ppConnect(t, dsn+" application_name=pp-same")
	other := ppConnect(t, dsn+" application_name=pp-other")
	inTx := func(c *pgx.Conn, want string, stmt string) {
		t.Helper()
		tx, err := c.Begin(ctx)
		require.NoError(t, err)
		if stmt != "" {
			_, err = tx.Exec(ctx, stmt)
			require.NoError(t, err)
		}
		var pid int
		require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
		require.Equal(t, want, ppActivityAppName(t, direct, pid))
		require.NoError(t, tx.Commit(ctx))
	}
	otherName := "pp-other"
	for round := range 2 {
		inTx(same1, "pp-same", "")
		inTx(same2, "pp-same", "") // the server is marked in sync with the shared snapshot
		inTx(other, otherName, "")
		inTx(same2, "pp-same", "")
		// A SET on the server: its ParameterStatus makes the mark stale.
		otherName = fmt.Sprintf("pp-changed-%d", round)
		inTx(other, otherName, "SET application_name = '"+otherName+"'")
		inTx(same1, "pp-same", "")
		inTx(other, otherName, "")
		inTx(same2, "pp-same", "")
	}
	// A client of the shared snapshot changes its name on a server marked
	// in sync with that snapshot: the snapshot's next client gets its own.
	inTx(same2, "pp-same", "")
	inTx(same1, "pp-same-changed", "SET application_name = 'pp-same-changed'")
	inTx(same2, "pp-same", "")
	inTx(same1, "pp-same-changed", "")
}
