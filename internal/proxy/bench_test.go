package proxy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/pgtest"
)

var (
	tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	txRE  = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

// selfCPU is the CPU time (user + system) this process has used.
func selfCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// statFields returns the fields of /proc/pid/stat from field 3 (state) on:
// index i holds field i+3. The command name before them is in parentheses
// and may contain anything.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// procCPU is the CPU time (user + system) process pid has used, from
// /proc/pid/stat fields 14 and 15 (clock ticks of 1/100 s).
func procCPU(t *testing.T, pid int) time.Duration {
	f, err := statFields(pid)
	require.NoError(t, err)
	ut, err := strconv.ParseInt(f[14-3], 10, 64)
	require.NoError(t, err)
	st, err := strconv.ParseInt(f[15-3], 10, 64)
	require.NoError(t, err)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// TestPgbenchRatio compares pgbench -S through the proxy with pgbench -S
// straight to PostgreSQL (the "make bench" number; aim: >= 0.95) and, for
// scale, through HAProxy in TCP mode in the same run. It runs only with
// PROXY_BENCH=1; PROXY_BENCH_SECONDS sets each run's length.
func TestPgbenchRatio(t *testing.T) {
	if os.Getenv("PROXY_BENCH") != "1" {
		t.Skip("set PROXY_BENCH=1 to compare pgbench -S through the proxy with direct")
	}
	secs := os.Getenv("PROXY_BENCH_SECONDS")
	if secs == "" {
		secs = "10"
	}
	pgbench, err := pgtest.FindBinary("pgbench")
	require.NoError(t, err)
	pg := pgtest.Start(t, pgtest.Options{})
	out, err := exec.Command(pgbench, "-i", "-s", "10", "-q", "-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-U", "postgres", "postgres").CombinedOutput()
	require.NoError(t, err, "%s", out)
	h := newHarness(t, ports("master", roles(leader)),
		patroni.Member{Name: "n1", Role: patroni.RoleLeader, State: patroni.StateRunning, Host: pg.Host, Port: pg.Port, LagKnown: true})
	clients := os.Getenv("PROXY_BENCH_CLIENTS")
	if clients == "" {
		clients = "8"
	}
	// run returns the TPS of one pgbench run and the CPU time cpu() grew
	// by per transaction; pin, if set, is the CPU pgbench runs on.
	run := func(port int, cpu func() time.Duration, pin string) (tps float64, perTx time.Duration) {
		args := []string{"-S", "-n", "-M", "prepared", "-c", clients, "-j", "2", "-T", secs,
			"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "postgres"}
		cmd := exec.Command(pgbench, args...)
		if pin != "" {
			cmd = exec.Command("taskset", append([]string{"-c", pin, pgbench}, args...)...)
		}
		before := cpu()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		used := cpu() - before
		m := tpsRE.FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		tps, err = strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		m = txRE.FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		n, err := strconv.ParseInt(string(m[1]), 10, 64)
		require.NoError(t, err)
		require.Positive(t, n)
		return tps, used / time.Duration(n)
	}
	none := func() time.Duration { return 0 }
	self := func() time.Duration { return selfCPU(t) }
	haPort, haPID := startHAProxy(t, pg.Host, pg.Port)
	haCPUTime := func() time.Duration { return procCPU(t, haPID) }
	proxyPort := tcpPort(h.addr("master"))

	direct1, _ := run(pg.Port, none, "")
	proxied, proxyCPU := run(proxyPort, self, "")
	ha, haCPU := run(haPort, haCPUTime, "")
	direct2, _ := run(pg.Port, none, "")
	direct := (direct1 + direct2) / 2
	t.Logf("pgbench -S -c %s: direct %.0f tps (runs %.0f, %.0f), through patroni_proxy %.0f tps, ratio %.3f; "+
		"through HAProxy (mode tcp) %.0f tps, ratio %.3f; patroni_proxy/HAProxy %.3f; "+
		"proxy CPU per transaction: patroni_proxy %.1f µs, HAProxy %.1f µs",
		clients, direct, direct1, direct2, proxied, proxied/direct, ha, ha/direct, proxied/ha,
		float64(proxyCPU.Nanoseconds())/1e3, float64(haCPU.Nanoseconds())/1e3)

	if runtime.NumCPU() < 2 {
		return
	}
	// Next to the applications the proxy takes no CPU from PostgreSQL.
	// Model that: PostgreSQL (the postmaster and every process it has or
	// forks) and pgbench on CPU 0, the proxies on CPU 1.
	pinTree(t, pg.PostmasterPID(t), 0)
	pinSelf(t, 1)
	pinTree(t, haPID, 1)
	d1, _ := run(pg.Port, none, "0")
	px, _ := run(proxyPort, none, "0")
	hp, _ := run(haPort, none, "0")
	d2, _ := run(pg.Port, none, "0")
	d := (d1 + d2) / 2
	t.Logf("pgbench -S -c %s pinned (PostgreSQL and pgbench on CPU 0, the proxy on CPU 1): direct %.0f tps (runs %.0f, %.0f), "+
		"through patroni_proxy %.0f tps, ratio %.3f; through HAProxy %.0f tps, ratio %.3f; patroni_proxy/HAProxy %.3f",
		clients, d, d1, d2, px, px/d, hp, hp/d, px/hp)
}

// pinTree pins every thread of pid and of its child processes to cpu
// (children forked later inherit it).
func pinTree(t *testing.T, pid, cpu int) {
	pids := []int{pid}
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(child)
		if err != nil || len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[4-3]); ppid == pid {
			pids = append(pids, child)
		}
	}
	for _, p := range pids {
		out, err := exec.Command("taskset", "-a", "-pc", strconv.Itoa(cpu), strconv.Itoa(p)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
}

// pinSelf pins every thread of this process to cpu.
func pinSelf(t *testing.T, cpu int) {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		require.NoError(t, err)
		_ = unix.SchedSetaffinity(tid, &set) // a thread may have ended meanwhile
	}
}

// startHAProxy runs HAProxy in TCP mode in front of host:port, in the
// foreground as a child of the test, and returns its listen port and pid.
func startHAProxy(t *testing.T, host string, port int) (int, int) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := tcpPort(ln.Addr())
	require.NoError(t, ln.Close())
	cfg := fmt.Sprintf(`global
    maxconn 1000
defaults
    mode tcp
    timeout connect 5s
    timeout client 1m
    timeout server 1m
listen pg
    bind 127.0.0.1:%d
    server pg %s:%d
`, listen, host, port)
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	cmd := exec.Command(bin, "-db", "-f", path)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start(), "HAProxy is needed for the comparison: apt-get install haproxy")
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(listen)), time.Second)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}, 10*time.Second, 20*time.Millisecond, "haproxy did not listen: %s", out.String())
	return listen, cmd.Process.Pid
}
