//go:build linux

package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/doorman-go/doorman/internal/pgtest"
)

var pg *pgtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, pgtest.Options{MaxConnections: 100}, func(c *pgtest.Cluster) { pg = c }))
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
