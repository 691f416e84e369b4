package admin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/metrics"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// startDaemon runs a real pg_doorman (admin console and metrics wired in)
// in front of a throwaway PostgreSQL with one pool "app" for user "alice".
func startDaemon(t *testing.T) (d *daemon.Daemon, pg *pgtest.Cluster) {
	t.Helper()
	return startDaemonWith(t, func(*config.Config) {})
}

// startDaemonWith is startDaemon with edit applied to the configuration.
func startDaemonWith(t *testing.T, edit func(*config.Config)) (d *daemon.Daemon, pg *pgtest.Cluster) {
	t.Helper()
	pg = pgtest.Start(t, pgtest.Options{})
	verifier := pg.CreateUser(t, "alice", "alice-pw", "md5")
	cfgText := fmt.Sprintf(`
[general]
host = "127.0.0.1"
unix_socket_dir = ""
admin_username = "admin"
admin_password = "admin-pw"

[pools.app]
server_host = "127.0.0.1"
server_port = %d
server_database = "postgres"
pool_mode = "transaction"

[[pools.app.users]]
username = "alice"
password = %q
pool_size = 2
`, pg.Port, verifier)
	path := filepath.Join(t.TempDir(), "pg_doorman.toml")
	require.NoError(t, os.WriteFile(path, []byte(cfgText), 0o600))
	cfg, _, err := config.Load(path)
	require.NoError(t, err)
	cfg.General.Port = 0 // any free port
	edit(cfg)

	d, err = daemon.New(cfg, zap.NewNop(), zap.NewAtomicLevelAt(zapcore.InfoLevel), daemon.Parts{
		Admin:   func(d *daemon.Daemon) daemon.Admin { return New(d, d.Metrics().(*metrics.Metrics)) },
		Metrics: func(d *daemon.Daemon) daemon.Metrics { return metrics.New(d) },
	})
	require.NoError(t, err)
	require.NoError(t, d.Listen())
	done := make(chan error, 1)
	go func() { done <- d.Serve(context.Background()) }()
	t.Cleanup(func() {
		d.Shutdown()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	return d, pg
}

func connect(t *testing.T, d *daemon.Daemon, user, password, db string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable default_query_exec_mode=simple_protocol",
		pgPort(d), user, password, db)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func pgPort(d *daemon.Daemon) int {
	var port int
	_, _ = fmt.Sscanf(d.Addr().String(), "127.0.0.1:%d", &port)
	return port
}

// adminShow runs a SHOW over the wire and returns rows keyed by column.
func adminShow(t *testing.T, admin *pgx.Conn, q string) []map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := admin.PgConn().Exec(ctx, q).ReadAll()
	require.NoError(t, err)
	require.Len(t, res, 1)
	return rowMaps(res[0])
}

func rowMaps(r *pgconn.Result) []map[string]string {
	var out []map[string]string
	for _, row := range r.Rows {
		m := map[string]string{}
		for i, f := range r.FieldDescriptions {
			m[f.Name] = string(row[i])
		}
		out = append(out, m)
	}
	return out
}

func find(rows []map[string]string, kv ...string) map[string]string {
	for _, r := range rows {
		ok := true
		for i := 0; i < len(kv); i += 2 {
			if r[kv[i]] != kv[i+1] {
				ok = false
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

func TestIntegrationAdminConsole(t *testing.T) {
	d, _ := startDaemon(t)
	admin := connect(t, d, "admin", "admin-pw", "pgdoorman")
	ctx := context.Background()
	// pgx's health check ("-- ping", which PgBouncer's console refuses).
	require.NoError(t, admin.Ping(ctx))

	// A client holds a transaction: its server connection is active.
	app := connect(t, d, "alice", "alice-pw", "app")
	tx, err := app.Begin(ctx)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))

	pools := adminShow(t, admin, "SHOW POOLS")
	p := find(pools, "database", "app", "user", "alice")
	require.NotNil(t, p, "%v", pools)
	require.Equal(t, "1", p["cl_active"])
	require.Equal(t, "1", p["sv_active"])
	require.Equal(t, "transaction", p["pool_mode"])

	servers := adminShow(t, admin, "SHOW SERVERS")
	srv := find(servers, "remote_pid", fmt.Sprint(pid))
	require.NotNil(t, srv, "%v", servers)
	require.Equal(t, "S", srv["type"])
	require.Equal(t, "active", srv["state"])

	clients := adminShow(t, admin, "SHOW CLIENTS")
	cl := find(clients, "user", "alice")
	require.NotNil(t, cl, "%v", clients)
	require.Equal(t, "active", cl["state"])
	require.Equal(t, srv["ptr"], cl["link"], "client links to its server")
	require.Equal(t, cl["ptr"], srv["link"], "server links to its client")
	require.NotNil(t, find(clients, "user", "admin", "database", "pgdoorman"), "admin session listed")

	require.NoError(t, tx.Commit(ctx))
	require.Eventually(t, func() bool {
		return find(adminShow(t, admin, "SHOW SERVERS"), "remote_pid", fmt.Sprint(pid), "state", "idle") != nil
	}, 5*time.Second, 20*time.Millisecond)
	stats := find(adminShow(t, admin, "SHOW STATS"), "database", "app")
	require.NotNil(t, stats)
	require.NotEqual(t, "0", stats["total_xact_count"])

	// PAUSE closes the idle server; a query waits until RESUME.
	_, err = admin.PgConn().Exec(ctx, "PAUSE app").ReadAll()
	require.NoError(t, err)
	require.Nil(t, find(adminShow(t, admin, "SHOW SERVERS"), "remote_pid", fmt.Sprint(pid)))
	errc := make(chan error, 1)
	go func() {
		var one int
		errc <- app.QueryRow(ctx, "SELECT 1").Scan(&one)
	}()
	require.Eventually(t, func() bool {
		p := find(adminShow(t, admin, "SHOW POOLS"), "database", "app", "user", "alice")
		return p["paused"] == "1" && p["cl_waiting"] == "1"
	}, 5*time.Second, 20*time.Millisecond)
	_, err = admin.PgConn().Exec(ctx, "RESUME app").ReadAll()
	require.NoError(t, err)
	require.NoError(t, <-errc)

	// Errors keep the session usable.
	_, err = admin.PgConn().Exec(ctx, "PAUSE nope").ReadAll()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "3D000", pgErr.Code)
	require.Equal(t, "no such database: nope", pgErr.Message)
	require.Len(t, adminShow(t, admin, "SHOW VERSION"), 1)

	// The extended protocol is refused, and the session stays usable.
	err = admin.PgConn().ExecParams(ctx, "SHOW POOLS", nil, nil, nil, nil).Read().Err
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "0A000", pgErr.Code)
	require.Len(t, adminShow(t, admin, "SHOW LOG_LEVEL"), 1)

	// SHUTDOWN is answered before the daemon closes the session.
	res, err := admin.PgConn().Exec(ctx, "SHUTDOWN").ReadAll()
	require.NoError(t, err)
	require.Equal(t, "SHUTDOWN", res[0].CommandTag.String())
	// The reply is written first, the shutdown starts right after it.
	require.Eventually(t, d.ShuttingDown, 5*time.Second, 5*time.Millisecond)
}

// TestIntegrationShowWhileClientsChurn reads every SHOW while clients log
// in, run queries and leave; run with -race it checks that the console
// reads session and server state safely.
func TestIntegrationShowWhileClientsChurn(t *testing.T) {
	d, _ := startDaemon(t)
	admin := connect(t, d, "admin", "admin-pw", "pgdoorman")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const workers, rounds = 6, 5
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() { errc <- churn(ctx, d, rounds) }()
	}
	finished := 0
	for finished < workers {
		for _, q := range []string{"SHOW CLIENTS", "SHOW SERVERS", "SHOW POOLS", "SHOW LISTS", "SHOW STATS", "SHOW DATABASES",
			"SHOW POOLS_EXTENDED", "SHOW POOLS_MEMORY", "SHOW CONNECTIONS", "SHOW SOCKETS"} {
			_, err := admin.PgConn().Exec(ctx, q).ReadAll()
			require.NoError(t, err, q)
		}
		select {
		case err := <-errc:
			require.NoError(t, err)
			finished++
		default:
		}
	}
}

func churn(ctx context.Context, d *daemon.Daemon, rounds int) error {
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=alice password=alice-pw dbname=app sslmode=disable default_query_exec_mode=simple_protocol", pgPort(d))
	for i := 0; i < rounds; i++ {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		var n int
		err = conn.QueryRow(ctx, "SELECT 1").Scan(&n)
		_ = conn.Close(ctx)
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
	}
	return nil
}

// TestIntegrationPoolViews reads SHOW POOLS, POOLS_EXTENDED, POOLS_MEMORY,
// CONNECTIONS and SOCKETS of a daemon that served real transactions.
func TestIntegrationPoolViews(t *testing.T) {
	const checkAfter = 50 * time.Millisecond
	d, _ := startDaemonWith(t, func(cfg *config.Config) { cfg.General.ServerIdleCheckTimeout = checkAfter })
	admin := connect(t, d, "admin", "admin-pw", "pgdoorman")
	ctx := context.Background()
	app := connect(t, d, "alice", "alice-pw", "app")
	for i := 0; i < 20; i++ {
		_, err := app.Exec(ctx, "SELECT pg_sleep(0.001)")
		require.NoError(t, err)
	}

	// Transaction mode: alice is logged in and holds no server. The
	// session marks itself idle just after it has written the answer, so
	// the client can ask before that: poll.
	var p map[string]string
	require.Eventually(t, func() bool {
		p = find(adminShow(t, admin, "SHOW POOLS"), "database", "app", "user", "alice")
		return p != nil && p["cl_idle"] == "1"
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, "1", p["cl_active"], "PgBouncer's cl_active counts idle clients")
	require.Equal(t, "0", p["sv_active"])
	// The idle server connection passes server_idle_check_timeout: it is
	// "used" (probed before its next use), no longer "idle".
	require.Eventually(t, func() bool {
		p := find(adminShow(t, admin, "SHOW POOLS"), "database", "app", "user", "alice")
		return p["sv_used"] == "1" && p["sv_idle"] == "0"
	}, 5*time.Second, 10*time.Millisecond)
	// Used again, it is idle (not yet past the check timeout) right after.
	_, err := app.Exec(ctx, "SELECT 1")
	require.NoError(t, err)

	var ext map[string]string
	require.Eventually(t, func() bool {
		ext = find(adminShow(t, admin, "SHOW POOLS_EXTENDED"), "database", "app", "user", "alice")
		return ext != nil && ext["cl_idle"] == "1"
	}, 5*time.Second, time.Millisecond)
	for _, col := range []string{"bytes_received", "bytes_sent"} {
		require.NotEqual(t, "0", ext[col], col)
	}
	p50 := parseMillis(t, ext["xact_p50_ms"])
	p99 := parseMillis(t, ext["xact_p99_ms"])
	require.Greater(t, p50, 0.5, "transactions ran pg_sleep(0.001)")
	require.GreaterOrEqual(t, p99, p50)
	require.GreaterOrEqual(t, parseMillis(t, ext["query_p99_ms"]), parseMillis(t, ext["query_p50_ms"]))

	mem := find(adminShow(t, admin, "SHOW POOLS_MEMORY"), "database", "app", "user", "alice")
	require.NotNil(t, mem)
	require.Equal(t, "1", mem["server_connections"])
	require.Equal(t, "8192", mem["server_read_buffers_bytes"])

	conns := adminShow(t, admin, "SHOW CONNECTIONS")
	require.Len(t, conns, 1)
	require.Equal(t, "2", conns[0]["plain"], "the admin and alice")
	require.Equal(t, "2", conns[0]["total"])
	require.Equal(t, "0", conns[0]["tls"])
	require.Equal(t, "2", conns[0]["clients"])
	require.Equal(t, "1", conns[0]["servers"])

	// The test process is pg_doorman here: its listener and both ends of
	// each client connection are ours.
	sockets := adminShow(t, admin, "SHOW SOCKETS")
	require.Len(t, sockets, 1)
	require.GreaterOrEqual(t, atoi(t, sockets[0]["tcp_listen"]), 1)
	require.GreaterOrEqual(t, atoi(t, sockets[0]["tcp_established"]), 5, "admin and alice (both ends) and the server connection")
}

func parseMillis(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, s)
	return v
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err, s)
	return n
}

// TestIntegrationPreparedStatementCounts: SHOW CLIENTS and SHOW SERVERS
// fill prepared_statements as PgBouncer does: the statements a client has
// prepared and not closed, and the statements prepared on a server
// connection.
func TestIntegrationPreparedStatementCounts(t *testing.T) {
	d, _ := startDaemonWith(t, func(c *config.Config) { c.General.PreparedStatements = true })
	admin := connect(t, d, "admin", "admin-pw", "pgdoorman")
	app := connect(t, d, "alice", "alice-pw", "app")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := func() string {
		cl := find(adminShow(t, admin, "SHOW CLIENTS"), "user", "alice")
		require.NotNil(t, cl)
		return cl["prepared_statements"]
	}
	require.Equal(t, "0", client())

	for _, name := range []string{"s1", "s2"} {
		_, err := app.PgConn().Prepare(ctx, name, "SELECT $1::int + 1", nil)
		require.NoError(t, err)
	}
	require.Equal(t, "2", client())

	res := app.PgConn().ExecPrepared(ctx, "s1", [][]byte{[]byte("41")}, nil, nil).Read()
	require.NoError(t, res.Err)
	require.Equal(t, "42", string(res.Rows[0][0]))
	// The pool has two servers: the one that ran s1 has it prepared.
	require.Eventually(t, func() bool {
		for _, srv := range adminShow(t, admin, "SHOW SERVERS") {
			if srv["prepared_statements"] != "0" {
				n, err := strconv.Atoi(srv["prepared_statements"])
				return err == nil && n == 1
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond, "a server lists the statement s1 prepared on it")

	require.NoError(t, app.PgConn().Deallocate(ctx, "s2"))
	require.Equal(t, "1", client())
}

// TestIntegrationClientRequestTimes: SHOW CLIENTS' wait and wait_us count
// how long a client has waited for a server while it waits, and its
// request_time is that of its latest request, not its login, in both
// pool modes (the transaction core's queue and a goroutine's wait).
func TestIntegrationClientRequestTimes(t *testing.T) {
	for _, mode := range []string{"transaction", "session"} {
		t.Run(mode, func(t *testing.T) {
			d, _ := startDaemonWith(t, func(c *config.Config) {
				p := c.Pools["app"]
				p.PoolMode = mode
				for i := range p.Users {
					p.Users[i].PoolMode = mode
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			admin := connect(t, d, "admin", "admin-pw", "pgdoorman")
			byPtr := func(ptr string) map[string]string {
				return find(adminShow(t, admin, "SHOW CLIENTS"), "ptr", ptr)
			}
			// The pool has two servers: two clients in a transaction hold
			// them, and a third client's query waits.
			var holders []*pgx.Conn
			for range 2 {
				h := connect(t, d, "alice", "alice-pw", "app")
				_, err := h.Exec(ctx, "BEGIN")
				require.NoError(t, err)
				holders = append(holders, h)
			}
			before := map[string]bool{}
			for _, r := range adminShow(t, admin, "SHOW CLIENTS") {
				before[r["ptr"]] = true
			}
			waiter := connect(t, d, "alice", "alice-pw", "app")
			var ptr string
			for _, r := range adminShow(t, admin, "SHOW CLIENTS") {
				if !before[r["ptr"]] {
					ptr = r["ptr"]
				}
			}
			require.NotEmpty(t, ptr)
			connected := byPtr(ptr)["connect_time"]
			// request_time moves past connect_time once a request comes in
			// a later second than the login.
			require.Eventually(t, func() bool {
				return time.Now().UTC().Format("2006-01-02 15:04:05 MST") > connected
			}, 3*time.Second, 10*time.Millisecond)
			done := make(chan error, 1)
			go func() {
				_, err := waiter.Exec(ctx, "BEGIN") // it keeps its server
				done <- err
			}()
			require.Eventually(t, func() bool {
				r := byPtr(ptr)
				w, _ := strconv.Atoi(r["wait"])
				us, _ := strconv.Atoi(r["wait_us"])
				return r["state"] == "waiting" && w*1_000_000+us >= 100_000
			}, 4*time.Second, 10*time.Millisecond, "a waiting client's wait grows")
			require.Greater(t, byPtr(ptr)["request_time"], connected, "request_time is the request's, not the login's")
			for _, h := range holders {
				// A session-mode client keeps its server until it leaves.
				require.NoError(t, h.Close(ctx))
			}
			require.NoError(t, <-done)
			r := byPtr(ptr)
			require.Equal(t, "0", r["wait"], "no wait once it has a server")
			require.Equal(t, "0", r["wait_us"])
			// The server it holds shows that request too, not the time it
			// was opened (for a holder, before the waiter logged in).
			srv := find(adminShow(t, admin, "SHOW SERVERS"), "link", ptr)
			require.NotNil(t, srv)
			require.Equal(t, r["request_time"], srv["request_time"])
		})
	}
}
