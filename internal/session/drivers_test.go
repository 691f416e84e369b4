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
	last := lines[len(lines)-1]
	t.Logf("%s in %v: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), last)
	return last
}

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
	d := start(t, "", "transaction", 2)
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
		{"pipeline", `^ok psycopg \S+ pipeline 12 clients \d+ queries skipped statement re-run gave \S+$`, true},
		{"discard", `^ok psycopg \S+ discard 3 rounds$`, false},
		{"evict", `^ok psycopg \S+ evict 20 statements, prepared_max 5$`, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			d := start(t, "", "transaction", 2)
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
