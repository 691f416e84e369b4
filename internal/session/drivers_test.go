package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// Real drivers that prepare statements, run as scripts from
// testdata/drivers against pg_doorman in transaction mode with pool_size 2
// and 12 concurrent clients, so that statements move between the two
// backends. Each script runs against PostgreSQL itself first: that proves
// its expectations are PostgreSQL's, and the pooler must print the same.

const driversDir = "testdata/drivers"

// driverEnv points libpq-style environment variables (read by libpq,
// psycopg and node-postgres alike) at 127.0.0.1:port as user app.
func driverEnv(port int) []string {
	return append(os.Environ(),
		"PGHOST=127.0.0.1", fmt.Sprintf("PGPORT=%d", port), "PGUSER=app",
		"PGPASSWORD=app-secret", "PGDATABASE=appdb", "PGSSLMODE=disable",
		"PGCONNECT_TIMEOUT=10", "CLIENTS=12")
}

// runDriver runs a script in testdata/drivers and returns its last line of
// standard output, failing the test on a non-zero exit or a timeout.
func runDriver(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = driversDir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	require.NoError(t, err, "%s %s\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), stdout.String(), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	t.Logf("%s in %v:\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), strings.Join(lines, "\n"))
	return lines[len(lines)-1]
}

// bothBackends makes a pool of 2 connect its second backend as soon as two
// clients are busy at once (no anticipation), so that statements really
// move between backends and requireMoved measures something.
const bothBackends = "  scaling_warm_pool_ratio: 100"

// requireMoved checks that clients shared cached statements and that
// statements were prepared again on the other backend.
func requireMoved(t *testing.T, d *apptest.Instance) {
	t.Helper()
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	require.Greater(t, p.Stats.PreparedHits.Load(), uint64(0), "clients shared cached statements")
	require.Greater(t, p.Stats.PreparedInjected.Load(), uint64(0), "statements moved between the 2 backends")
}

// nodeWithPG returns the node binary, installing node-postgres into
// testdata/drivers/node_modules from package-lock.json when it is missing.
func nodeWithPG(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is missing: apt-get install -y nodejs npm (node 18+)")
	if _, err := os.Stat(filepath.Join(driversDir, "node_modules", "pg", "package.json")); err == nil {
		return node
	}
	npm, err := exec.LookPath("npm")
	require.NoError(t, err, "npm is missing (needed to install node-postgres): apt-get install -y npm")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund")
	cmd.Dir = driversDir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm install in %s (needs the npm registry):\n%s", driversDir, out)
	return node
}

// pythonWithPsycopg returns a python3 that imports psycopg 3: Debian's
// /usr/bin/python3 first, since another python3 may come earlier in PATH.
func pythonWithPsycopg(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	var tried []string
	for _, py := range candidates {
		out, err := exec.Command(py, "-c", "import psycopg").CombinedOutput()
		if err == nil {
			return py
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", py, err, bytes.TrimSpace(out)))
	}
	require.FailNow(t, "psycopg 3 is missing: apt-get install -y python3-psycopg (Debian's package for /usr/bin/python3)",
		strings.Join(tried, "\n"))
	return ""
}

func TestDriversNodePostgresNamedQueries(t *testing.T) {
	node := nodeWithPG(t)
	d := start(t, bothBackends, "transaction", 2)
	direct := runDriver(t, driverEnv(pg.Port), node, "named.js")
	require.Regexp(t, `^ok node-postgres 12 clients \d+ queries$`, direct)
	got := runDriver(t, driverEnv(d.Port), node, "named.js")
	require.Equal(t, direct, got, "the same results as PostgreSQL itself")
	requireMoved(t, d)
}

func TestDriversPsycopg(t *testing.T) {
	py := pythonWithPsycopg(t)
	for _, tc := range []struct {
		mode  string
		want  string // regexp of the ok line
		moved bool
	}{
		{"prepared", `^ok psycopg \S+ prepared 12 clients \d+ queries$`, true},
		{"pipeline", `^ok psycopg \S+ pipeline 12 clients \d+ queries$`, true},
		{"discard", `^ok psycopg \S+ discard 4 rounds$`, false},
		{"evict", `^ok psycopg \S+ evict 20 statements, prepared_max 5$`, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			d := start(t, bothBackends, "transaction", 2)
			direct := runDriver(t, driverEnv(pg.Port), py, "psycopg_check.py", tc.mode)
			require.Regexp(t, tc.want, direct)
			got := runDriver(t, driverEnv(d.Port), py, "psycopg_check.py", tc.mode)
			require.Equal(t, direct, got, "the same results as PostgreSQL itself")
			if tc.moved {
				requireMoved(t, d)
			}
		})
	}
}

// TestDriversLateParseAfterPipelineError reproduces, at the protocol
// level, what psycopg's pipeline mode shows: messages a client sends after
// PostgreSQL has already reported an error in a pipeline (before Sync) are
// skipped by PostgreSQL. The Parse of a statement the server already has
// must not get a ParseComplete from the pooler, and neither Parse may
// define the client's name or mark the statement prepared on the server.
// The expected trace is PostgreSQL's own, taken live.
func TestDriversLateParseAfterPipelineError(t *testing.T) {
	setupUsers(t)
	d := start(t, "", "transaction", 1)
	trace := func(t *testing.T, dsn string) string {
		ctx := context.Background()
		// Another client prepares 'late-cached': the server has it.
		a, err := pgconn.Connect(ctx, dsn)
		require.NoError(t, err)
		defer a.Close(ctx)
		_, err = a.Prepare(ctx, "w", "SELECT 'late-cached'", nil)
		require.NoError(t, err)

		b, err := pgconn.Connect(ctx, dsn)
		require.NoError(t, err)
		h, err := hijack(b)
		require.NoError(t, err)
		defer h.Conn.Close()
		fe := h.Frontend
		var out []string
		step := func(until string, msgs ...pgproto3.FrontendMessage) {
			for _, m := range msgs {
				fe.Send(m)
			}
			require.NoError(t, fe.Flush())
			_ = h.Conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			var got []string
			for {
				m, err := fe.Receive()
				if err != nil {
					got = append(got, "read error")
					break
				}
				typ := fmt.Sprintf("%T", m)[len("*pgproto3."):]
				if e, ok := m.(*pgproto3.ErrorResponse); ok {
					typ += "(" + e.Code + ")"
				}
				got = append(got, typ)
				if typ == until || strings.HasPrefix(typ, until+"(") {
					break
				}
			}
			out = append(out, strings.Join(got, " "))
		}
		step("ErrorResponse", &pgproto3.Parse{Query: "SELECT 1/0"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{})
		// The error is read: these are sent to a server skipping to Sync.
		step("ReadyForQuery", &pgproto3.Parse{Name: "late1", Query: "SELECT 'late-cached'"},
			&pgproto3.Parse{Name: "late2", Query: "SELECT 'late-new'"}, &pgproto3.Sync{})
		for _, name := range []string{"late1", "late2"} {
			step("ReadyForQuery", &pgproto3.Bind{PreparedStatement: name}, &pgproto3.Execute{}, &pgproto3.Sync{})
		}
		// A third client must find 'late-new' usable on the server.
		c, err := pgconn.Connect(ctx, dsn)
		require.NoError(t, err)
		defer c.Close(ctx)
		_, err = c.Prepare(ctx, "x", "SELECT 'late-new'", nil)
		if err == nil {
			err = c.ExecPrepared(ctx, "x", nil, nil, nil).Read().Err
		}
		out = append(out, fmt.Sprintf("third client: %v", err))
		return strings.Join(out, "\n")
	}
	want := trace(t, fmt.Sprintf("host=127.0.0.1 port=%d user=app password=app-secret dbname=appdb sslmode=disable", pg.Port))
	t.Logf("PostgreSQL:\n%s", want)
	got := trace(t, d.DSN("app", "app-secret", "appdb"))
	require.Equal(t, want, got, "pg_doorman answers like PostgreSQL")
}
