package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Shutdown modes, as signals to the postmaster.
const (
	syscallFast      = syscall.SIGINT
	syscallImmediate = syscall.SIGQUIT
)

const (
	opTimeout      = time.Minute // bounds one stop, start or kill
	portAttempts   = 5
	portRangeStart = 20000 // below Linux's ephemeral range (32768-60999),
	portRangeSize  = 12000 // so outgoing connections do not take our ports
)

// errPortInUse marks a start that failed only because the port was taken.
var errPortInUse = errors.New("port in use")

// startFresh picks a port and starts the server for the first time,
// trying another port if the chosen one was taken meanwhile.
func (c *Cluster) startFresh(ctx context.Context) error {
	var err error
	for range portAttempts {
		if c.Port, err = freePort(); err != nil {
			return err
		}
		if err = c.writeConfig(); err != nil {
			return err
		}
		if err = c.startServer(ctx); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

func freePort() (int, error) {
	for range 100 {
		port := portRangeStart + rand.IntN(portRangeSize)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, errors.New("no free tcp port found")
}

// writeConfig writes pgtest.conf and pg_hba.conf into the data directory.
func (c *Cluster) writeConfig() error {
	conf := serverConf{port: c.Port, socketDir: c.SocketDir, clusterName: c.Name, opts: c.opts}
	if err := c.env.writeOwned(filepath.Join(c.DataDir, "pgtest.conf"), conf.render()); err != nil {
		return err
	}
	if err := c.writeTLSFiles(); err != nil {
		return err
	}
	c.group.mu.Lock()
	lines := append([]string(nil), c.group.userLines...)
	c.group.mu.Unlock()
	return c.env.writeOwned(filepath.Join(c.DataDir, "pg_hba.conf"), renderHba(c.opts, lines))
}

// writeTLSFiles copies the server certificate, its key (mode 0600, as
// PostgreSQL demands) and the CA into the data directory.
func (c *Cluster) writeTLSFiles() error {
	set := c.opts.TLS
	if set == nil {
		return nil
	}
	for _, f := range []struct{ from, to string }{
		{set.Server.Cert, "server.crt"}, {set.Server.Key, "server.key"}, {set.CA.Cert, "root.crt"},
	} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			return fmt.Errorf("tls files: %w", err)
		}
		to := filepath.Join(c.DataDir, f.to)
		if err := c.env.writeOwned(to, string(b)); err != nil {
			return err
		}
		if err := os.Chmod(to, 0o600); err != nil {
			return fmt.Errorf("tls files: %w", err)
		}
	}
	return nil
}

// startServer runs the postmaster as a child of the test process and waits
// until it accepts connections. Pdeathsig kills it if the test binary dies
// (Go ties it to the forking OS thread, which the runtime keeps alive unless
// a goroutine exits while locked to it).
func (c *Cluster) startServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return errors.New("server already running")
	}
	logf, err := os.OpenFile(c.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	cmd := c.env.command(context.Background(), "postgres", "-D", c.DataDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr)
	err = cmd.Start()
	_ = logf.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("run postgres: %w", err)
	}
	c.cmd = cmd
	if err := c.waitReady(ctx, cmd.Process.Pid); err != nil {
		_ = c.killLocked(context.Background())
		log := c.logSince(logStart)
		if strings.Contains(log, "Address already in use") {
			err = errors.Join(errPortInUse, err)
		}
		return fmt.Errorf("%w; server log:\n%s", err, log)
	}
	return nil
}

// waitReady polls until SELECT 1 succeeds as the superuser, failing early
// if the postmaster pid exits. Like pg_ctl it first waits for postmaster.pid
// to say the server is up, which keeps failed attempts out of the log.
func (c *Cluster) waitReady(ctx context.Context, pid int) error {
	last := errors.New("server not up yet")
	for {
		if !alive(pid) {
			return fmt.Errorf("postmaster %d exited", pid)
		}
		if pmStatusUp(c.DataDir) {
			if last = ping(ctx, c.SuperDSN("postgres")); last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for server: %w (last error: %w)", ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// pmStatusUp reports whether line 8 of postmaster.pid (the postmaster
// status, see miscadmin.h) says "ready" or "standby".
func pmStatusUp(dataDir string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 8 {
		return false
	}
	status := strings.TrimSpace(lines[7])
	return status == "ready" || status == "standby"
}

func ping(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Exec(ctx, "SELECT 1").Close()
}

// logSince returns the log written after offset.
func (c *Cluster) logSince(offset int64) string {
	b, err := os.ReadFile(c.LogFile)
	if err != nil || offset > int64(len(b)) {
		return c.logTail(30)
	}
	return string(b[offset:])
}

// PID returns the running postmaster's pid, for callers without a
// testing.TB (the benchmark reads the server's CPU time through it).
func (c *Cluster) PID() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return 0, errors.New("server not running")
	}
	return c.cmd.Process.Pid, nil
}

// PostmasterPID returns the running postmaster's pid (e.g. to pin it to a
// CPU in a benchmark).
func (c *Cluster) PostmasterPID(t testing.TB) int {
	t.Helper()
	pid, err := c.PID()
	if err != nil {
		t.Fatalf("postmaster pid: %v", err)
	}
	return pid
}

// stop shuts the server down with the given signal and waits; after
// opTimeout it kills the whole process tree.
func (c *Cluster) stop(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	pid := c.cmd.Process.Pid
	_ = syscall.Kill(pid, sig)
	err := waitDead(ctx, pid)
	if err != nil {
		err = errors.Join(fmt.Errorf("shutdown: %w", err), c.killLocked(context.Background()))
	}
	_ = c.cmd.Wait() // reap; the exit status says nothing useful here
	c.cmd = nil
	return err
}

// killLocked SIGKILLs the postmaster and its children, reaps the
// postmaster and removes the lock files they left. c.mu must be held.
func (c *Cluster) killLocked(ctx context.Context) error {
	if c.cmd == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	err := killTree(ctx, c.cmd.Process.Pid)
	_ = c.cmd.Wait()
	c.cmd = nil
	if err != nil {
		return err
	}
	// No process is left, so the lock files are stale; without them a zombie
	// postmaster pid cannot look alive to the next start.
	_ = os.Remove(filepath.Join(c.DataDir, "postmaster.pid"))
	_ = os.Remove(c.SocketPath() + ".lock")
	_ = os.Remove(c.SocketPath())
	return nil
}

// WaitReady polls until the server accepts connections from the superuser
// or ctx ends; it fails at once if the server is not running.
func (c *Cluster) WaitReady(ctx context.Context) error {
	pid, err := c.PID()
	if err != nil {
		return err
	}
	return c.waitReady(ctx, pid)
}

// Stop shuts the server down in fast mode and waits until it has exited.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop(syscallFast); err != nil {
		t.Fatalf("pgtest: stop %s: %v", c.Name, err)
	}
}

// Start starts a stopped server on the same port and waits until it
// accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := c.startServer(ctx); err != nil {
		t.Fatalf("pgtest: start %s: %v", c.Name, err)
	}
}

// Restart is Stop then Start.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	c.Stop(t)
	c.Start(t)
}

// KillPostmaster SIGKILLs the postmaster and its children and removes the
// stale lock files so that Start works; Start then runs crash recovery. As
// after a real crash, commits made with synchronous_commit=off (the
// cluster's setting) in the last few hundred milliseconds may be lost:
// commit with synchronous_commit=on what must survive.
func (c *Cluster) KillPostmaster(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		t.Fatalf("pgtest: kill postmaster of %s: server not running", c.Name)
	}
	if err := c.killLocked(context.Background()); err != nil {
		t.Fatalf("pgtest: kill postmaster of %s: %v", c.Name, err)
	}
}

// KillBackend SIGKILLs one backend of this cluster. As with any backend
// crash, the postmaster then ends every other session and recovers;
// KillBackend returns once the server accepts connections again.
func (c *Cluster) KillBackend(t testing.TB, pid int) {
	t.Helper()
	pm, err := c.PID()
	if err != nil {
		t.Fatalf("pgtest: kill backend %d: %v", pid, err)
	}
	if _, ppid, ok := procStat(pid); !ok || ppid != pm {
		t.Fatalf("pgtest: kill backend %d: not a child of postmaster %d", pid, pm)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("pgtest: kill backend %d: %v", pid, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	// Once the postmaster has reaped the backend it is in crash recovery, so
	// a successful ping afterwards means recovery is over.
	for {
		if state, ppid, ok := procStat(pid); !ok || ppid != pm || state == 'X' {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: kill backend %d: postmaster did not reap it", pid)
		case <-time.After(pollInterval):
		}
	}
	if err := c.waitReady(ctx, pm); err != nil {
		t.Fatalf("pgtest: kill backend %d: %v; server log:\n%s", pid, err, c.logTail(30))
	}
}
