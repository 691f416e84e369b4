package deploytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"

	"github.com/doorman-go/doorman/internal/pgtest"
)

var pg *pgtest.Cluster

func TestMain(m *testing.M) {
	c, cleanup, err := pgtest.StartMain(pgtest.Options{MaxConnections: 100})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		os.Exit(1)
	}
	pg = c
	code := m.Run()
	cleanup()
	if code == 0 {
		// pg_doorman, the fake Patroni and the prometheus process waiter
		// are all stopped by the tests' cleanups.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// deployDir is the repository's deploy/ directory.
func deployDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(file))
}

// tool returns the path of a Prometheus program, failing with how to
// install it.
func tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found in PATH: install it (Debian: apt-get install -y prometheus, or scripts/deps.sh test; "+
			"elsewhere https://prometheus.io/download/)", name)
	}
	return p
}
