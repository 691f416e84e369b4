//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// upgradeRig is PostgreSQL with pgbench tables and a pg_doorman binary in
// front of it, started by the test (the process of a binary upgrade must be
// a real process: the new one is started from the binary's path).
type upgradeRig struct {
	pg      *pgtest.Cluster
	bin     string
	cfgPath string
	port    int
	stderr  logFile
	first   *exec.Cmd
	notify  *notifySocket
}

// notifySocket stands in for systemd's NOTIFY_SOCKET.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []string
}

func listenNotify(t *testing.T, dir string) *notifySocket {
	t.Helper()
	n := &notifySocket{path: filepath.Join(dir, "notify.sock")}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, string(buf[:k]))
			n.mu.Unlock()
		}
	}()
	return n
}

func (n *notifySocket) has(msg string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.msgs, msg)
}

// logFile is the processes' stderr: a file, not a pipe, because the new
// processes inherit it and a pipe would keep the first one's Wait open.
type logFile string

func (l logFile) String() string {
	b, _ := os.ReadFile(string(l))
	return string(b)
}

func newUpgradeRig(t *testing.T, extraArgs ...string) *upgradeRig {
	t.Helper()
	bin, err := buildBinary()
	require.NoError(t, err)
	pg := pgtest.Start(t, pgtest.Options{MaxConnections: 200})
	scram := pg.CreateUser(t, "app", "app-secret", "scram-sha-256")
	pg.CreateDatabase(t, "appdb")
	pgbench := pgBinary(t, "pgbench")
	out, err := exec.Command(pgbench, "-i", "-q", "-s", "1", "-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-U", "postgres", "appdb").CombinedOutput()
	require.NoError(t, err, "pgbench -i: %s", out)
	pg.ExecDB(t, "appdb", "GRANT ALL ON ALL TABLES IN SCHEMA public TO app")
	dir := t.TempDir()
	r := &upgradeRig{pg: pg, bin: bin, port: apptest.FreePort(t), stderr: logFile(filepath.Join(dir, "stderr.log"))}
	logf, err := os.Create(string(r.stderr))
	require.NoError(t, err)
	defer logf.Close() // the processes hold their own copies
	r.cfgPath = filepath.Join(dir, "pg_doorman.yaml")
	require.NoError(t, os.WriteFile(r.cfgPath, []byte(fmt.Sprintf(`general:
  host: 127.0.0.1
  port: %d
  unix_socket_dir: %q
  admin_username: admin
  admin_password: admin-pw
  shutdown_timeout: 30s
  query_wait_timeout: 10s
  tcp_keepalives_idle: 11
  tcp_keepalives_interval: 13
  tcp_keepalives_count: 7
  daemon_pid_file: %q
pools:
  appdb:
    server_host: 127.0.0.1
    server_port: %d
    users:
      - {username: app, password: '%s', pool_size: 20}
`, r.port, dir, filepath.Join(dir, "pg_doorman.pid"), pg.Port, scram)), 0o600))
	r.notify = listenNotify(t, dir)
	r.first = exec.Command(bin, append(extraArgs, r.cfgPath)...)
	r.first.Stderr = logf
	r.first.Env = append(os.Environ(), "NOTIFY_SOCKET="+r.notify.path)
	require.NoError(t, r.first.Start())
	t.Cleanup(func() {
		for _, pid := range r.pids() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = r.first.Wait()
	})
	r.waitServing(t)
	return r
}

func pgBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := pgtest.FindBinary(name)
	require.NoError(t, err, "%s is needed: apt-get install postgresql-15", name)
	return p
}

var readyLine = regexp.MustCompile(`New process signaled readiness\s+\{"pid": (\d+)\}`)

// pids are the processes of the rig: the first and every new one.
func (r *upgradeRig) pids() []int {
	out := []int{r.first.Process.Pid}
	for _, m := range readyLine.FindAllStringSubmatch(r.stderr.String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		out = append(out, pid)
	}
	return out
}

func (r *upgradeRig) dsn(user, password, db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable", r.port, user, password, db)
}

// admin runs one admin console query and returns its rows as maps.
func (r *upgradeRig) admin(t *testing.T, q string) []map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, r.dsn("admin", "admin-pw", "pgdoorman")+" default_query_exec_mode=simple_protocol")
	require.NoError(t, err)
	defer c.Close(ctx)
	res, err := c.PgConn().Exec(ctx, q).ReadAll()
	require.NoError(t, err)
	var rows []map[string]string
	for _, row := range res[0].Rows {
		m := map[string]string{}
		for i, fd := range res[0].FieldDescriptions {
			m[fd.Name] = string(row[i])
		}
		rows = append(rows, m)
	}
	return rows
}

func (r *upgradeRig) waitServing(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, r.dsn("app", "app-secret", "appdb"))
		if err != nil {
			return false
		}
		c.Close(ctx)
		return true
	}, 20*time.Second, 50*time.Millisecond, "pg_doorman does not serve; stderr:\n%s", r.stderr)
}

// upgrade sends SIGUSR2 to pid and waits for the new process to be ready
// and for pid to exit; it returns the new process's pid.
func (r *upgradeRig) upgrade(t *testing.T, pid int, sig syscall.Signal) int {
	t.Helper()
	before := len(r.pids())
	require.NoError(t, syscall.Kill(pid, sig))
	return r.waitNew(t, before)
}

// upgradeByAdmin is upgrade through the admin console's UPGRADE.
func (r *upgradeRig) upgradeByAdmin(t *testing.T) int {
	t.Helper()
	before := len(r.pids())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, r.dsn("admin", "admin-pw", "pgdoorman")+" default_query_exec_mode=simple_protocol")
	require.NoError(t, err)
	res, err := c.PgConn().Exec(ctx, "UPGRADE").ReadAll()
	require.NoError(t, err)
	require.Equal(t, "UPGRADE", res[0].CommandTag.String())
	require.NoError(t, c.Close(ctx), "the admin session leaves, so the old process can exit")
	return r.waitNew(t, before)
}

func (r *upgradeRig) waitNew(t *testing.T, before int) int {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.pids()) > before }, 30*time.Second, 20*time.Millisecond,
		"no new process; stderr:\n%s", r.stderr)
	pids := r.pids()
	return pids[len(pids)-1]
}

func gone(pid int) bool { return syscall.Kill(pid, 0) != nil || zombie(pid) }

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// TestBinaryUpgrade: pgbench (simple and prepared, 50 clients) runs through
// pg_doorman while it upgrades itself twice; no transaction fails and no
// client reconnects. A client with a prepared statement and one inside a
// long transaction carry on; a broken config aborts the upgrade.
func TestBinaryUpgrade(t *testing.T) {
	r := newUpgradeRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	prep, err := pgx.Connect(ctx, r.dsn("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer prep.Close(ctx)
	_, err = prep.Prepare(ctx, "plus_one", "SELECT $1::int + 1")
	require.NoError(t, err)
	long, err := pgx.Connect(ctx, r.dsn("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer long.Close(ctx)
	tx, err := long.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1")
	require.NoError(t, err)

	psql := startPsql(t, r)
	require.Equal(t, "1", psql.query(t, "SELECT 1"))

	pgbench := pgBinary(t, "pgbench")
	type result struct {
		out string
		err error
	}
	bench := func(mode string) chan result {
		ch := make(chan result, 1)
		cmd := exec.CommandContext(ctx, pgbench, "-n", "-S", "-M", mode, "-c", "25", "-j", "2", "-T", "20",
			"-h", "127.0.0.1", "-p", strconv.Itoa(r.port), "-U", "app", "appdb")
		cmd.Env = append(os.Environ(), "PGPASSWORD=app-secret")
		go func() {
			out, err := cmd.CombinedOutput()
			ch <- result{string(out), err}
		}()
		return ch
	}
	simple, prepared := bench("simple"), bench("prepared")
	require.Eventually(t, func() bool { return len(r.admin(t, "SHOW CLIENTS")) >= 53 }, 20*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { // pgbench gets going before the first upgrade
		n := 0
		for _, row := range r.admin(t, "SHOW STATS") {
			k, _ := strconv.Atoi(row["total_xact_count"])
			n += k
		}
		return n >= 2000
	}, 20*time.Second, 50*time.Millisecond)

	// SIGINT without a terminal is the seed's legacy upgrade signal.
	second := r.upgrade(t, r.first.Process.Pid, syscall.SIGINT)
	// The long transaction commits on the old process after the upgrade
	// started, then moves on.
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, r.first.Wait(), "the old process exits cleanly; stderr:\n%s", r.stderr)
	require.True(t, r.notify.has("READY=1"), "the first process told systemd it is ready")
	require.Eventually(t, func() bool { return r.notify.has(fmt.Sprintf("MAINPID=%d\nREADY=1", second)) }, 5*time.Second, 10*time.Millisecond,
		"the new process tells systemd it is the main process now")
	// Every client (pgbench's 50, two pgx, psql) is on the second process
	// before it upgrades in turn (plus this admin session).
	require.Eventually(t, func() bool { return len(r.admin(t, "SHOW CLIENTS")) == 54 }, 20*time.Second, 50*time.Millisecond)
	// A migrated client's socket keeps the configured keepalives (the new
	// process adopts it through net.FileConn, which sets Go's own).
	prepPort := prep.PgConn().Conn().LocalAddr().(*net.TCPAddr).Port
	require.Equal(t, [3]int{11, 13, 7}, keepalives(t, second, r.port, prepPort),
		"TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT of the migrated client's socket in the new process")
	third := r.upgradeByAdmin(t)
	require.Eventually(t, func() bool { return gone(second) }, 40*time.Second, 50*time.Millisecond, "second process did not exit")
	// pgbench is still running: its 50 clients and the two pgx ones are
	// on the third process, never having reconnected (pgbench does not
	// reconnect: a lost connection aborts its client, checked below). The
	// second process may exit with migrated clients still in the
	// migration socket: the third adopts them as it reads them.
	require.Eventually(t, func() bool { return len(r.admin(t, "SHOW CLIENTS")) == 54 }, 20*time.Second, 50*time.Millisecond,
		"53 clients and this admin session on the third process")
	select {
	case <-simple:
		t.Fatal("pgbench ended before the second upgrade was over: the test shows nothing")
	default:
	}

	for name, ch := range map[string]chan result{"simple": simple, "prepared": prepared} {
		res := <-ch
		require.NoError(t, res.err, "pgbench -M %s: %s", name, res.out)
		require.Contains(t, res.out, "number of failed transactions: 0 ", "pgbench -M %s:\n%s", name, res.out)
		require.NotContains(t, res.out, "aborted", "pgbench -M %s:\n%s", name, res.out)
	}
	var n int
	require.NoError(t, prep.QueryRow(ctx, "plus_one", 41).Scan(&n), "the prepared statement survived two upgrades")
	require.Equal(t, 42, n)
	require.Equal(t, "app", psql.query(t, "SELECT current_user"), "the psql session carries on")
	var bal int
	require.NoError(t, long.QueryRow(ctx, "SELECT count(*) FROM pgbench_branches").Scan(&bal), "the long-transaction client carries on")
	// pgbench's sessions end as the third process reads their EOFs.
	require.Eventually(t, func() bool { return len(r.admin(t, "SHOW CLIENTS")) == 4 }, 20*time.Second, 50*time.Millisecond,
		"the two pgx clients, psql and this admin session, on the third process")
	migrated := strings.Count(r.stderr.String(), "migrated to new process")
	require.GreaterOrEqual(t, migrated, 2*53, "every client moved twice")
	t.Logf("%d client migrations over two upgrades", migrated)
	// The lines the seed's monitoring section lists, in its words.
	for _, line := range []*regexp.Regexp{
		regexp.MustCompile(`Got SIGINT, starting binary upgrade and graceful shutdown`), // the first upgrade's signal
		regexp.MustCompile(`Validating configuration with: \S+ -t \S+`),
		regexp.MustCompile(`Configuration validation successful`),
		regexp.MustCompile(`Starting new process with inherited listener fd=\d+`),
		regexp.MustCompile(`Client migration enabled`),
		regexp.MustCompile(`\[app@appdb #c\d+\] client 127\.0\.0\.1:\d+ migrated to new process`),
		regexp.MustCompile(`\[app@appdb #c\d+\] migrated client accepted from 127\.0\.0\.1:\d+`),
		regexp.MustCompile(`Migration sender finished`),
		regexp.MustCompile(`migration receiver: listening for migrated clients`),
	} {
		require.Regexp(t, line, r.stderr.String())
	}

	// A broken config: the upgrade is aborted, the process serves on.
	good, err := os.ReadFile(r.cfgPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(r.cfgPath, append(good, []byte("bogus_key: 1\n")...), 0o600))
	require.NoError(t, syscall.Kill(third, syscall.SIGUSR2))
	require.Eventually(t, func() bool { return strings.Contains(r.stderr.String(), "BINARY UPGRADE ABORTED") }, 30*time.Second, 50*time.Millisecond)
	require.False(t, gone(third))
	require.NoError(t, prep.QueryRow(ctx, "plus_one", 1).Scan(&n))
	require.Equal(t, 2, n)
	require.Len(t, r.pids(), 3, "no new process")

	require.NoError(t, syscall.Kill(third, syscall.SIGTERM))
	require.Eventually(t, func() bool { return gone(third) }, 40*time.Second, 50*time.Millisecond)
}

// keepalives reads TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT of process
// pid's TCP socket from 127.0.0.1:local to 127.0.0.1:remote, through a
// copy of its descriptor (pidfd_getfd(2); the test runs as root or as the
// same user).
func keepalives(t *testing.T, pid, local, remote int) [3]int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	require.NoError(t, err)
	l, rm := fmt.Sprintf("0100007F:%04X", local), fmt.Sprintf("0100007F:%04X", remote)
	var inode string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 9 && f[1] == l && f[2] == rm {
			inode = f[9]
		}
	}
	require.NotEmpty(t, inode, "no socket %s -> %s of process %d", l, rm, pid)
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	target := -1
	for _, e := range ents {
		if link, _ := os.Readlink(filepath.Join(dir, e.Name())); link == "socket:["+inode+"]" {
			target, _ = strconv.Atoi(e.Name())
		}
	}
	require.GreaterOrEqual(t, target, 0, "no descriptor of process %d holds socket %s", pid, inode)
	pidfd, err := unix.PidfdOpen(pid, 0)
	require.NoError(t, err)
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, target, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	var out [3]int
	for i, opt := range []int{unix.TCP_KEEPIDLE, unix.TCP_KEEPINTVL, unix.TCP_KEEPCNT} {
		out[i], err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, opt)
		require.NoError(t, err)
	}
	return out
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// TestBinaryUpgradeDaemonMode: under -d the new process takes the
// listeners and rewrites the pid file; clients are not migrated but
// drained (58006 pooler is shut down now) at their idle point, as the seed
// documents.
func TestBinaryUpgradeDaemonMode(t *testing.T) {
	r := newUpgradeRig(t, "-d")
	require.NoError(t, r.first.Wait(), "the -d parent exits once the daemon started")
	pidFile := filepath.Join(filepath.Dir(r.cfgPath), "pg_doorman.pid")
	old := readPID(pidFile)
	require.NotZero(t, old)
	t.Cleanup(func() {
		for _, pid := range []int{old, readPID(pidFile)} {
			if pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	idle, err := pgx.Connect(ctx, r.dsn("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer idle.Close(ctx)

	require.NoError(t, syscall.Kill(old, syscall.SIGUSR2))
	require.Eventually(t, func() bool { p := readPID(pidFile); return p != 0 && p != old }, 30*time.Second, 20*time.Millisecond,
		"the new daemon writes its pid")
	nu := readPID(pidFile)
	require.Eventually(t, func() bool { return gone(old) }, 30*time.Second, 20*time.Millisecond, "the old daemon exits")
	err = idle.Ping(ctx)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe, "the idle client was drained: %v", err)
	require.Equal(t, "58006", pe.Code)
	require.Equal(t, "pooler is shut down now", pe.Message, "the seed's text for a drained client")
	c, err := pgx.Connect(ctx, r.dsn("app", "app-secret", "appdb"))
	require.NoError(t, err, "the new daemon serves")
	c.Close(ctx)
	require.NoError(t, syscall.Kill(nu, syscall.SIGTERM))
	require.Eventually(t, func() bool { return gone(nu) }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, readPID(pidFile), "the last daemon removes its pid file")
}

// psqlSession is a psql process reading queries from a pipe: a real
// client session that lives across the upgrades.
type psqlSession struct {
	in  *os.File
	out *bufio.Reader
}

func startPsql(t *testing.T, r *upgradeRig) *psqlSession {
	t.Helper()
	cmd := exec.Command(pgBinary(t, "psql"), "-X", "-A", "-t", "-q", r.dsn("app", "app-secret", "appdb"))
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	require.NoError(t, cmd.Start())
	_ = inR.Close()
	_ = outW.Close()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = outR.Close()
	})
	return &psqlSession{in: inW, out: bufio.NewReader(outR)}
}

// query sends one statement and returns psql's one-line answer.
func (p *psqlSession) query(t *testing.T, sql string) string {
	t.Helper()
	_, err := fmt.Fprintf(p.in, "%s;\n", sql)
	require.NoError(t, err)
	line, err := p.out.ReadString('\n')
	require.NoError(t, err, "psql said: %q", line)
	return strings.TrimSpace(line)
}
