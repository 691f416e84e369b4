package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/testbuf"
)

// logLevelForms are the general.log_level values of the settings reference
// and what SHOW LOG_LEVEL reports once pg_doorman runs with them.
var logLevelForms = []struct{ level, show string }{
	{"info", "info"},
	{"trace", "debug"},
	{"off", "off"},
	{"default", "info"},
	{"warn,pg_doorman::pool::pool_coordinator=debug", "warn"},
	{"pg_doorman::pool=debug", "debug"},
}

func writeLevelConfig(t *testing.T, path string, port int, level string) {
	t.Helper()
	doc := fmt.Sprintf("general:\n  host: 127.0.0.1\n  port: %d\n  unix_socket_dir: \"\"\n  admin_password: admin-pw\n  log_level: %q\npools: {}\n", port, level)
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
}

// TestCheckLogLevels: -t accepts every form, and so does -l.
func TestCheckLogLevels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	for _, f := range logLevelForms {
		writeLevelConfig(t, path, 6432, f.level)
		require.Equal(t, 0, run([]string{"-t", path}), f.level)
	}
	writeLevelConfig(t, path, 6432, "loud")
	require.Equal(t, 1, run([]string{"-t", path}))
}

// buildBinary compiles pg_doorman once per test run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "pg_doorman-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "pg_doorman")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

type process struct {
	cmd    *exec.Cmd
	stderr *testbuf.Buffer
	port   int
	path   string
}

func startBinary(t *testing.T, level string, args ...string) *process {
	t.Helper()
	bin, err := buildBinary()
	require.NoError(t, err)
	p := &process{stderr: &testbuf.Buffer{}, port: apptest.FreePort(t), path: filepath.Join(t.TempDir(), "c.yaml")}
	writeLevelConfig(t, p.path, p.port, level)
	p.cmd = exec.Command(bin, append(args, p.path)...)
	p.cmd.Stderr = p.stderr
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// queryLogLevel asks the admin console once.
func (p *process) queryLogLevel() (string, bool) {
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=admin password=admin-pw dbname=pgdoorman sslmode=disable default_query_exec_mode=simple_protocol", p.port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", false
	}
	defer conn.Close(ctx)
	res, err := conn.PgConn().Exec(ctx, "SHOW LOG_LEVEL").ReadAll()
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
		return "", false
	}
	return string(res[0].Rows[0][0]), true
}

// showLogLevel polls the admin console until it answers.
func (p *process) showLogLevel(t *testing.T) string {
	t.Helper()
	var level string
	require.Eventually(t, func() bool {
		l, ok := p.queryLogLevel()
		level = l
		return ok
	}, 20*time.Second, 50*time.Millisecond, "admin console never answered; stderr:\n%s", p.stderr)
	return level
}

func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.cmd.Wait(), "stderr:\n%s", p.stderr)
}

// TestStartWithLogLevels: what -t accepts, the process runs with.
func TestStartWithLogLevels(t *testing.T) {
	for _, f := range logLevelForms {
		t.Run(f.level, func(t *testing.T) {
			p := startBinary(t, f.level)
			require.Equal(t, f.show, p.showLogLevel(t))
			p.stop(t)
			if f.show == "off" {
				require.Empty(t, p.stderr.String(), "off logs nothing")
			}
		})
	}
	t.Run("-l trace overrides the file", func(t *testing.T) {
		p := startBinary(t, "error", "-l", "trace")
		require.Equal(t, "debug", p.showLogLevel(t))
		p.stop(t)
		require.Contains(t, p.stderr.String(), "--log-level: trace is logged as debug")
	})
}

// TestReloadBadLogLevelKeepsLevel: SIGHUP with an unknown level keeps the
// running level and says so; a good level is then applied.
func TestReloadBadLogLevelKeepsLevel(t *testing.T) {
	p := startBinary(t, "trace")
	require.Equal(t, "debug", p.showLogLevel(t))

	writeLevelConfig(t, p.path, p.port, "loud")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool {
		return strings.Contains(p.stderr.String(), "reload failed, keeping the running configuration")
	}, 10*time.Second, 20*time.Millisecond, "stderr:\n%s", p.stderr)
	require.Contains(t, p.stderr.String(), `general.log_level: unknown level \"loud\"`)
	require.Equal(t, "debug", p.showLogLevel(t), "level kept")

	writeLevelConfig(t, p.path, p.port, "warn,pg_doorman::pool=debug")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool {
		l, ok := p.queryLogLevel()
		return ok && l == "warn"
	}, 10*time.Second, 20*time.Millisecond, "stderr:\n%s", p.stderr)
	p.stop(t)
}
