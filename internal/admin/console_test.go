package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/protocol"
)

func TestShowColumnsAndTypes(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	const sockets = "type user database state addr port local_addr local_port connect_time request_time wait wait_us close_needed ptr link remote_pid tls application_name prepared_statements"
	const socketText = "type user database state addr local_addr connect_time request_time ptr link tls application_name"
	const poolsCols = "database user cl_active cl_waiting cl_active_cancel_req cl_waiting_cancel_req sv_active sv_active_cancel sv_being_canceled sv_idle sv_used sv_tested sv_login maxwait maxwait_us pool_mode paused cl_idle"
	tests := []struct {
		query    string
		columns  string
		textCols string // the other columns are numOID
		numOID   uint32
		rows     int // -1: some
	}{
		{"SHOW POOLS", poolsCols, "database user pool_mode", oidInt4, 3},
		{"SHOW POOLS_MEMORY", "database user prepared_statements_count prepared_statements_bytes server_connections server_read_buffers_bytes histograms_bytes total_bytes",
			"database user", oidInt8, 3},
		{"SHOW CONNECTIONS", "total errors tls plain cancel clients servers", "", oidInt8, 1},
		{"SHOW POOL_SCALING", "user database inflight creates gate_waits burst_gate_budget_ex antic_notify antic_timeout create_fallback replenish_def",
			"user database", oidInt8, 3},
		{"SHOW STATS", "database total_xact_count total_query_count total_received total_sent total_xact_time total_query_time total_wait_time avg_xact_count avg_query_count avg_recv avg_sent avg_xact_time avg_query_time avg_wait_time",
			"database", oidInt8, 2},
		{"SHOW CLIENTS", sockets, socketText, oidInt4, 0},
		{"SHOW SERVERS", sockets, socketText, oidInt4, 0},
		{"SHOW DATABASES", "name host port database force_user pool_size min_pool_size reserve_pool server_lifetime pool_mode max_connections current_connections paused disabled",
			"name host database force_user pool_mode", oidInt4, 3},
		{"SHOW USERS", "name pool_mode", "name pool_mode", 0, 2},
		{"SHOW LISTS", "list items", "list", oidInt4, 14},
		{"SHOW CONFIG", "key value default changeable", "key value default changeable", 0, -1},
		{"SHOW VERSION", "version", "version", 0, 1},
		{"SHOW LOG_LEVEL", "log_level", "log_level", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := query1(t, c, tt.query+";")
			require.Nil(t, r.Err)
			require.Equal(t, "SHOW", r.Tag)
			require.Equal(t, strings.Fields(tt.columns), r.Columns)
			if tt.rows >= 0 {
				require.Len(t, r.Rows, tt.rows)
			} else {
				require.NotEmpty(t, r.Rows)
			}
			textCols := strings.Fields(tt.textCols)
			for i, name := range r.Columns {
				want := tt.numOID
				if slices.Contains(textCols, name) {
					want = oidText
				}
				if tt.query == "SHOW POOL_SCALING" && name == "inflight" {
					want = oidInt4
				}
				require.Equal(t, want, r.OIDs[i], "type of %s", name)
			}
		})
	}
}

func TestShowValues(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)

	pools := query1(t, c, "show pools")
	alice := pools.row(t, "app", "alice")
	require.Equal(t, "transaction", *alice["pool_mode"])
	require.Equal(t, "0", *alice["paused"])
	require.Equal(t, "session", *pools.row(t, "app", "bob")["pool_mode"])

	dbs := query1(t, c, "SHOW DATABASES")
	row := dbs.row(t, "app", "127.0.0.1", "1", "app", "alice")
	require.Equal(t, "7", *row["pool_size"])
	require.Equal(t, "1", *row["min_pool_size"])
	other := dbs.row(t, "other")
	require.Equal(t, "/var/run/postgresql", *other["host"])
	require.Equal(t, "real_other", *other["database"])

	users := query1(t, c, "SHOW USERS")
	require.Equal(t, [][]*string{{str("alice"), str("transaction")}, {str("bob"), str("session")}}, users.Rows)

	lists := query1(t, c, "SHOW LISTS")
	require.Equal(t, "2", *lists.row(t, "databases")["items"])
	require.Equal(t, "2", *lists.row(t, "users")["items"])
	require.Equal(t, "3", *lists.row(t, "pools")["items"])

	cfg := query1(t, c, "SHOW CONFIG")
	require.Equal(t, "********", *cfg.row(t, "admin_password")["value"])
	port := cfg.row(t, "port")
	require.Equal(t, "6432", *port["value"])
	require.Equal(t, "5432", *port["default"])
	require.Equal(t, "no", *port["changeable"])
	require.Equal(t, "yes", *cfg.row(t, "idle_timeout")["changeable"])
	require.Equal(t, "yes", *cfg.row(t, "tls_certificate")["changeable"], "reloaded on SIGHUP")
	require.Equal(t, "no", *cfg.row(t, "tls_mode")["changeable"])
	require.Equal(t, "yes", *cfg.row(t, "backlog")["changeable"], "listen(2) again on reload")
	for _, k := range []string{"transaction_loop", "syslog_prog_name"} {
		require.Equal(t, "no", *cfg.row(t, k)["changeable"], "%s is fixed at start (a reload warns)", k)
	}

	require.Equal(t, "PgDoorman "+daemon.Version, *query1(t, c, "SHOW VERSION").Rows[0][0])
	require.Equal(t, "info", *query1(t, c, "SHOW LOG_LEVEL").Rows[0][0])
}

func TestShowHelp(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	r := query1(t, c, "SHOW HELP")
	require.Equal(t, "SHOW", r.Tag)
	require.Len(t, r.Notices, 1)
	require.Equal(t, "Console usage", r.Notices[0].Message)
	// The seed's text, line for line.
	const seed = `
	SHOW HELP|CONFIG|DATABASES|POOLS|POOLS_EXTENDED|POOLS_MEMORY|POOL_COORDINATOR|POOL_SCALING
	SHOW CLIENTS|SERVERS|USERS|CONNECTIONS|STATS|PREPARED_STATEMENTS|AUTH_QUERY
	SHOW LISTS|SOCKETS|LOG_LEVEL|VERSION
	SET log_level = '<filter>'
	RELOAD
	SHUTDOWN
	UPGRADE
	PAUSE [db]
	RESUME [db]
	RECONNECT [db]`
	require.Equal(t, seed, r.Notices[0].Detail)

	// Every SHOW the help lists is answered, and nothing else is.
	var listed []string
	for _, line := range strings.Split(seed, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "SHOW "); ok {
			listed = append(listed, strings.Split(rest, "|")...)
		}
	}
	slices.Sort(listed)
	var accepted []string
	for s := range showSubjects {
		accepted = append(accepted, s)
	}
	slices.Sort(accepted)
	require.Equal(t, accepted, listed)
}

func TestPauseResumeReconnect(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	paused := func(db, user string) string {
		return *query1(t, c, "SHOW POOLS").row(t, db, user)["paused"]
	}

	r := query1(t, c, "PAUSE app")
	require.Nil(t, r.Err)
	require.Equal(t, "PAUSE", r.Tag)
	require.Equal(t, "1", paused("app", "alice"))
	require.Equal(t, "1", paused("app", "bob"))
	require.Equal(t, "0", paused("other", "alice"))
	require.Equal(t, "1", *query1(t, c, "SHOW DATABASES").row(t, "app", "127.0.0.1", "1", "app", "bob")["paused"])

	require.Equal(t, "RESUME", query1(t, c, "resume \"app\";").Tag)
	require.Equal(t, "0", paused("app", "alice"))

	require.Equal(t, "PAUSE", query1(t, c, "PAUSE").Tag)
	require.Equal(t, "1", paused("other", "alice"))
	require.Equal(t, "RESUME", query1(t, c, "RESUME").Tag)
	require.Equal(t, "0", paused("other", "alice"))

	p, ok := c.d.Pools.Lookup("app", "alice")
	require.True(t, ok)
	epoch := p.Conns().Stats().Epoch
	require.Equal(t, "RECONNECT", query1(t, c, "RECONNECT app").Tag)
	require.Equal(t, epoch+1, p.Conns().Stats().Epoch)
	require.Equal(t, "RECONNECT", query1(t, c, "RECONNECT").Tag)
	require.Equal(t, epoch+2, p.Conns().Stats().Epoch)
}

// TestPauseWaitsForBusyConnections holds a server connection "in use" by
// keeping a create in flight against a listener that never answers.
func TestPauseWaitsForBusyConnections(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held connList
	go held.accept(ln)
	t.Cleanup(func() {
		_ = ln.Close()
		held.closeAll()
	})
	// query_wait_timeout 1s: the connect keeps its client's deadline after
	// the client leaves (pool.hedgedWait), so the test waits that long.
	cfg := strings.Replace(testConfig, "[general]\n", "[general]\nquery_wait_timeout = \"1s\"\n", 1) + fmt.Sprintf(`
[pools.slow]
server_host = "127.0.0.1"
server_port = %d
connect_timeout = "1m"

[[pools.slow.users]]
username = "carol"
password = "md5c4ca4238a0b923820dcc509a6f75849b"
`, ln.Addr().(*net.TCPAddr).Port)
	c, _ := newTestConsole(t, cfg)
	c.pauseTimeout = 100 * time.Millisecond
	p, ok := c.d.Pools.Lookup("slow", "carol")
	require.True(t, ok)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx)
		errc <- err
	}()
	require.Eventually(t, func() bool { return p.Conns().Stats().Creating == 1 }, 5*time.Second, 5*time.Millisecond)

	start := time.Now()
	r := query1(t, c, "PAUSE slow")
	require.Equal(t, "PAUSE", r.Tag)
	require.GreaterOrEqual(t, time.Since(start), c.pauseTimeout)
	require.Len(t, r.Notices, 1)
	require.Contains(t, r.Notices[0].Message, "1 pool(s) still have server connections in use")
	row := query1(t, c, "SHOW POOLS").row(t, "slow", "carol")
	require.Equal(t, "1", *row["paused"])
	require.Equal(t, "1", *row["sv_login"])

	cancel()
	require.Error(t, <-errc)
	require.Eventually(t, func() bool { return p.Conns().Stats().Creating == 0 }, 5*time.Second, 5*time.Millisecond,
		"the connect ends at its client's deadline")
	r = query1(t, c, "PAUSE slow")
	require.Empty(t, r.Notices, "nothing in use any more")
	require.Equal(t, "RESUME", query1(t, c, "RESUME slow").Tag)
}

// connList accepts connections and never answers them.
type connList struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connList) accept(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		l.conns = append(l.conns, nc)
		l.mu.Unlock()
	}
}

func (l *connList) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, nc := range l.conns {
		_ = nc.Close()
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	tests := []struct {
		query, code, msg string
	}{
		{"SELECT 1", "42601", "invalid command 'SELECT 1', use SHOW HELP;"},
		{"SHOW NOPE", "42601", "invalid command 'SHOW NOPE', use SHOW HELP;"},
		{"PAUSE nope", "3D000", "no such database: nope"},
		{"RESUME nope", "3D000", "no such database: nope"},
		{"RECONNECT nope", "3D000", "no such database: nope"},
		{"PAUSE App", "3D000", "no such database: App"}, // case-sensitive like PostgreSQL
		{"PAUSE pgdoorman", "55000", "cannot pause admin db: pgdoorman"},
		{"RELOAD now", "42601", "invalid command 'RELOAD now', use SHOW HELP;"},
		{"SET log_level = 'loud'", "22023", "invalid log_level"},
		{"SET port = 1", "55P02", "port cannot be changed"},
		{"SET nope = 1", "42704", "unknown parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := query1(t, c, tt.query)
			require.NotNil(t, r.Err, "%q must fail", tt.query)
			require.Equal(t, "ERROR", r.Err.Severity)
			require.Equal(t, tt.code, r.Err.Code)
			require.Contains(t, r.Err.Message, tt.msg)
		})
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	c, path := newTestConsole(t, testConfig)
	changed := strings.Replace(testConfig, "pool_size = 7", "pool_size = 9", 1)
	require.NoError(t, os.WriteFile(path, []byte(changed), 0o600))
	require.Equal(t, "RELOAD", query1(t, c, "RELOAD").Tag)
	require.Equal(t, "9", *query1(t, c, "SHOW DATABASES").row(t, "app", "127.0.0.1", "1", "app", "alice")["pool_size"])

	require.NoError(t, os.WriteFile(path, []byte("[general]\nport = \"x\"\n"), 0o600))
	r := query1(t, c, "RELOAD")
	require.NotNil(t, r.Err)
	require.Equal(t, "F0000", r.Err.Code)
	require.Contains(t, r.Err.Message, "RELOAD failed")
	require.Equal(t, "9", *query1(t, c, "SHOW DATABASES").row(t, "app", "127.0.0.1", "1", "app", "alice")["pool_size"], "old config kept")
}

func TestSetLogLevel(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	level := func() string { return *query1(t, c, "SHOW LOG_LEVEL").Rows[0][0] }

	require.Equal(t, "SET", query1(t, c, "SET log_level = 'debug'").Tag)
	require.Equal(t, zapcore.DebugLevel, c.d.Level.Level())
	require.Equal(t, "debug", level())

	require.Equal(t, "SET", query1(t, c, "set LOG_LEVEL to warn").Tag)
	require.Equal(t, "warn", level())

	r := query1(t, c, "SET log_level = 'error,pg_doorman::pool::pool_coordinator=debug'")
	require.Equal(t, "SET", r.Tag)
	require.Len(t, r.Notices, 1)
	require.Contains(t, r.Notices[0].Message, "per-module")
	require.Equal(t, "error", level())

	require.Equal(t, "SET", query1(t, c, "SET log_level = 'off'").Tag)
	require.Equal(t, "off", level())

	require.Equal(t, "SET", query1(t, c, "SET log_level = 'default'").Tag)
	require.Equal(t, "info", level())

	r = query1(t, c, "SET client_encoding = 'UTF8'")
	require.Equal(t, "SET", r.Tag)
	require.Equal(t, "SET ignored", r.Notices[0].Message)
}

func TestMultipleStatements(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)

	res := query(t, c, "SHOW VERSION; show log_level ;;")
	require.Len(t, res, 2)
	require.Equal(t, []string{"version"}, res[0].Columns)
	require.Equal(t, []string{"log_level"}, res[1].Columns)

	// Execution stops at the first failing command.
	res = query(t, c, "PAUSE other; PAUSE nope; PAUSE app")
	require.Len(t, res, 2)
	require.Equal(t, "PAUSE", res[0].Tag)
	require.Equal(t, "3D000", res[1].Err.Code)
	require.Equal(t, "0", *query1(t, c, "SHOW POOLS").row(t, "app", "alice")["paused"])
	require.Equal(t, "1", *query1(t, c, "SHOW POOLS").row(t, "other", "alice")["paused"])

	// A syntax error anywhere runs nothing.
	res = query(t, c, "RESUME other; bogus")
	require.Len(t, res, 1)
	require.Equal(t, "42601", res[0].Err.Code)
	require.Equal(t, "1", *query1(t, c, "SHOW POOLS").row(t, "other", "alice")["paused"])

	// Only separators: EmptyQueryResponse.
	r := query1(t, c, " ; ")
	require.True(t, r.Empty)
}

func TestServeProtocol(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	q := func(s string) []byte { return protocol.Query{String: s}.Encode(nil) }
	parse := protocol.Parse{Query: "SHOW POOLS"}.Encode(nil)
	bind := protocol.Bind{}.Encode(nil)
	exec := protocol.Execute{}.Encode(nil)
	sync := protocol.Sync{}.Encode(nil)
	term := protocol.Terminate{}.Encode(nil)

	t.Run("extended protocol refused until Sync", func(t *testing.T) {
		out, err := exchange(t, c, parse, bind, exec, sync, q("SHOW VERSION"), term)
		require.NoError(t, err)
		res, ready := decode(t, out)
		require.Equal(t, 2, ready)
		require.Len(t, res, 2)
		require.Equal(t, "0A000", res[0].Err.Code)
		require.Equal(t, "extended query protocol not supported by the admin console", res[0].Err.Message)
		require.Equal(t, "SHOW", res[1].Tag)
	})
	t.Run("end of stream is a clean end", func(t *testing.T) {
		out, err := exchange(t, c, q("SHOW VERSION"))
		require.NoError(t, err)
		_, ready := decode(t, out)
		require.Equal(t, 1, ready)
	})
	t.Run("Terminate stops before later messages", func(t *testing.T) {
		out, err := exchange(t, c, term, q("SHOW VERSION"))
		require.NoError(t, err)
		require.Empty(t, out)
	})
	t.Run("unknown message is fatal", func(t *testing.T) {
		out, err := exchange(t, c, protocol.CopyDone{}.Encode(nil))
		require.Error(t, err)
		res, _ := decode(t, out)
		require.Equal(t, "FATAL", res[0].Err.Severity)
		require.Equal(t, "08P01", res[0].Err.Code)
	})
	t.Run("malformed Query is fatal", func(t *testing.T) {
		out, err := exchange(t, c, []byte{'Q', 0, 0, 0, 5, 'x'}) // no terminating NUL
		require.Error(t, err)
		res, _ := decode(t, out)
		require.Equal(t, "FATAL", res[0].Err.Severity)
	})
	t.Run("write error ends the session", func(t *testing.T) {
		in := protocol.NewReader(strings.NewReader(string(q("SHOW VERSION"))), 0, 1<<20)
		boom := errors.New("boom")
		err := c.serve(context.Background(), in, func([]byte) error { return boom })
		require.ErrorIs(t, err, boom)
	})
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	require.False(t, c.d.ShuttingDown())
	require.Equal(t, "SHUTDOWN", query1(t, c, "SHUTDOWN").Tag)
	require.True(t, c.d.ShuttingDown())
	// The drain goroutine started by Shutdown ends once it sees no clients.
	require.Eventually(t, func() bool { return c.d.Clients.Len() == 0 }, 5*time.Second, 10*time.Millisecond)
}
