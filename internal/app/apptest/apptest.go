// Package apptest starts an in-process pg_doorman for integration tests,
// from a YAML config written to a temporary file, on a free port, and shuts
// it down when the test ends.
package apptest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/doorman-go/doorman/internal/app"
	"github.com/doorman-go/doorman/internal/config"
)

// Instance is a running pg_doorman.
type Instance struct {
	*app.App
	Port    int
	Dir     string // holds the config file and the unix socket
	CfgPath string
	done    chan error
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Render replaces {{PORT}} and {{DIR}} in a config template.
func (i *Instance) Render(tmpl string) string {
	return strings.NewReplacer("{{PORT}}", fmt.Sprint(i.Port), "{{DIR}}", i.Dir).Replace(tmpl)
}

// Start writes the config (a YAML template with {{PORT}} and {{DIR}}) and
// starts pg_doorman. general.host/port/unix_socket_dir may be left out:
// Start fills them in.
func Start(t testing.TB, tmpl string) *Instance {
	t.Helper()
	dir, err := os.MkdirTemp("", "doorman-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	i := &Instance{Port: FreePort(t), Dir: dir, CfgPath: filepath.Join(dir, "pg_doorman.yaml"), done: make(chan error, 1)}
	i.WriteConfig(t, tmpl)
	cfg, warnings, err := config.Load(i.CfgPath)
	if err != nil {
		t.Fatalf("load config: %v\n%s", err, i.Render(tmpl))
	}
	for _, w := range warnings {
		t.Logf("config warning: %s", w)
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	if os.Getenv("DOORMAN_TEST_DEBUG") != "" {
		log = zaptest.NewLogger(t)
	}
	a, err := app.Build(cfg, log, zap.NewAtomicLevel())
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	i.App = a
	ready := make(chan struct{})
	go func() { i.done <- a.Run(context.Background(), func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-i.done:
		t.Fatalf("pg_doorman did not start: %v", err)
	}
	t.Cleanup(func() { i.Stop(t) })
	return i
}

// WriteConfig renders tmpl into the config file, adding the listen
// settings when the template has no general.port.
func (i *Instance) WriteConfig(t testing.TB, tmpl string) {
	t.Helper()
	body := i.Render(tmpl)
	if !strings.Contains(body, "port: ") || !strings.Contains(body, "general:") {
		t.Fatalf("config template needs a general section with port: {{PORT}}")
	}
	if err := os.WriteFile(i.CfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Stop shuts pg_doorman down and waits, at most 30 s.
func (i *Instance) Stop(t testing.TB) {
	if i.done == nil {
		return
	}
	i.Daemon.Shutdown()
	select {
	case <-i.done:
	case <-time.After(30 * time.Second):
		t.Errorf("pg_doorman did not stop within 30s")
	}
	i.done = nil
}

// Wait waits for Serve to return after a Shutdown.
func (i *Instance) Wait(timeout time.Duration) error {
	select {
	case err := <-i.done:
		i.done = nil
		return err
	case <-time.After(timeout):
		return fmt.Errorf("pg_doorman still running after %s", timeout)
	}
}

// DSN is a libpq/pgx DSN to pg_doorman over TCP.
func (i *Instance) DSN(user, password, db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable", i.Port, user, password, db)
}

// SocketDSN is a DSN to pg_doorman over its unix socket.
func (i *Instance) SocketDSN(user, password, db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable", i.Dir, i.Port, user, password, db)
}
