package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
)

const (
	checkUser = "rolecheck"
	checkPass = "cli-secret-Zq7"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds pgrole_check once per test process into a temp dir.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pgrole_check-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "pgrole_check")
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = "/usr/local/go/bin/go"
		}
		out, err := exec.Command(goBin, "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// run runs the binary and returns exit code, stdout, stderr.
func run(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errb.String()
}

type pair struct{ primary, replica *pgtest.Cluster }

func startPair(t *testing.T, opts pgtest.Options) pair {
	t.Helper()
	p := pgtest.Start(t, opts)
	p.CreateUser(t, checkUser, checkPass, "scram-sha-256")
	r := p.AddReplica(t)
	p.WaitReplay(t, r)
	return pair{p, r}
}

func passwordFile(t *testing.T, pw string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(path, []byte(pw+"\n"), 0o600))
	return path
}

func TestCheckCLI(t *testing.T) {
	binary(t) // build before the timed runs
	pp := startPair(t, pgtest.Options{})
	pwFile := passwordFile(t, checkPass)
	badFile := passwordFile(t, "not-the-"+checkPass)
	port := func(c *pgtest.Cluster) string { return strconv.Itoa(c.Port) }
	conn := func(c *pgtest.Cluster) []string {
		return []string{"--host", "127.0.0.1", "--port", port(c), "--user", checkUser, "--database", "postgres"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	silent := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	t.Cleanup(func() { ln.Close() })
	go func() { // accepts and never answers
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := strconv.Itoa(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()

	tests := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stderr string
	}{
		{"primary wants primary", nil, append([]string{"check", "--role", "primary", "--password-file", pwFile}, conn(pp.primary)...), 0, ""},
		{"replica wants primary", nil, append([]string{"check", "--role", "primary", "--password-file", pwFile}, conn(pp.replica)...), 1, "is replica, want primary"},
		{"replica wants replica recovery", nil, append([]string{"check", "--role", "replica", "--method", "recovery", "--password-file", pwFile}, conn(pp.replica)...), 0, ""},
		{"primary wants replica recovery", nil, append([]string{"check", "--role", "replica", "--method", "recovery", "--password-file", pwFile}, conn(pp.primary)...), 1, "is primary, want replica"},
		{"any with max lag", nil, append([]string{"check", "--role", "any", "--max-lag", "16MB", "--password-file", pwFile}, conn(pp.replica)...), 0, ""},
		{"PGPASSWORD", []string{"PGPASSWORD=" + checkPass}, append([]string{"check", "--role", "primary"}, conn(pp.primary)...), 0, ""},
		{"wrong password file", nil, append([]string{"check", "--password-file", badFile}, conn(pp.primary)...), 2, "28P01"},
		{"wrong PGPASSWORD", []string{"PGPASSWORD=bad-" + checkPass}, append([]string{"check"}, conn(pp.primary)...), 2, "password authentication failed"},
		{"haproxy arguments", []string{"PGPASSWORD=" + checkPass, "HAPROXY_SERVER_ADDR=10.255.255.1", "HAPROXY_SERVER_PORT=1"},
			[]string{"check", "--role", "replica", "--user", checkUser, "--database", "postgres", "127.0.0.1", "5000", "127.0.0.1", port(pp.replica)}, 0, ""},
		{"haproxy environment", []string{"PGPASSWORD=" + checkPass, "HAPROXY_SERVER_ADDR=127.0.0.1", "HAPROXY_SERVER_PORT=" + port(pp.primary)},
			[]string{"check", "--role", "primary", "--user", checkUser, "--database", "postgres"}, 0, ""},
		{"unreachable", nil, []string{"check", "--port", refused, "--user", checkUser}, 2, "connection refused"},
		{"timeout", nil, []string{"check", "--port", silent, "--user", checkUser, "--timeout", "300ms"}, 2, "i/o timeout"},
		{"bad role", nil, []string{"check", "--role", "boss"}, 2, "unknown role"},
		{"bad flag", nil, []string{"check", "--no-such-flag"}, 2, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := run(t, tt.env, tt.args...)
			require.Equal(t, tt.code, code, stderr)
			require.Less(t, time.Since(start), 5*time.Second)
			if tt.stderr == "" {
				require.Empty(t, stderr)
				return
			}
			require.Contains(t, stderr, tt.stderr)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			require.NotContains(t, stderr, checkPass, "the password must never be printed")
		})
	}
}

// pgConnect opens a connection through HAProxy with a short timeout.
func pgConnect(port int, db string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	dsn := "host=127.0.0.1 port=" + strconv.Itoa(port) + " user=" + checkUser + " password=" + checkPass +
		" dbname=" + db + " sslmode=disable connect_timeout=2"
	return pgx.Connect(ctx, dsn)
}
