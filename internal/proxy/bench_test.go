//go:build linux

package proxy

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/testbuf"
)

var (
	tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	txRE  = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

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

// TestPgbenchRatio compares pgbench -S through patroni_proxy with pgbench
// -S straight to PostgreSQL (the "make bench" number; aim: >= 0.95) and,
// for scale, through HAProxy in TCP mode in the same run, with each
// proxy's CPU per transaction. The proxy is the built binary
// (PROXY_BENCH_BIN, default bin/patroni_proxy: make build) run as a child,
// so that its CPU is its own and not the test's. It runs only with
// PROXY_BENCH=1; PROXY_BENCH_SECONDS sets each run's length and
// PROXY_BENCH_ROUNDS (4: even, so that each proxy runs first as often)
// how many rounds each placement runs. Results are
// logged as Markdown table rows prefixed "proxybench: ", which
// scripts/bench.sh collects into docs/benchmarks-proxy.md.
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
	api := patronitest.NewServer(t, []byte(`{"members":[]}`))
	api.SetCluster(t, &patroni.Cluster{Members: []patroni.Member{
		{Name: "n1", Role: patroni.RoleLeader, State: patroni.StateRunning, Host: pg.Host, Port: pg.Port, LagKnown: true},
	}})
	clients := os.Getenv("PROXY_BENCH_CLIENTS")
	if clients == "" {
		clients = "8"
	}
	rounds := 4
	if r := os.Getenv("PROXY_BENCH_ROUNDS"); r != "" {
		rounds, err = strconv.Atoi(r)
		require.NoError(t, err, "PROXY_BENCH_ROUNDS")
		require.Positive(t, rounds, "PROXY_BENCH_ROUNDS")
	}
	// run runs pgbench once and returns its TPS, its transactions and the
	// CPU time process pid (0: none) used meanwhile; pin, if set, is the
	// CPU pgbench runs on.
	run := func(port, pid int, pin string) (tps float64, txs int64, used time.Duration) {
		args := []string{"-S", "-n", "-M", "prepared", "-c", clients, "-j", "2", "-T", secs,
			"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "postgres"}
		cmd := exec.Command(pgbench, args...)
		if pin != "" {
			cmd = exec.Command("taskset", append([]string{"-c", pin, pgbench}, args...)...)
		}
		cpu := func() time.Duration {
			if pid == 0 {
				return 0
			}
			return procCPU(t, pid)
		}
		before := cpu()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		used = cpu() - before
		m := tpsRE.FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		tps, err = strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		m = txRE.FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		txs, err = strconv.ParseInt(string(m[1]), 10, 64)
		require.NoError(t, err)
		require.Positive(t, txs)
		return tps, txs, used
	}
	haPort, haPID := startHAProxy(t, pg.Host, pg.Port)
	proxyPort, proxyPID := startProxyBinary(t, api.URL())

	// row runs the placement's rounds and logs one table row. A round is a
	// direct run, then both proxies, patroni_proxy first in odd rounds and
	// HAProxy first in even ones; one more direct run ends the row. TPS is
	// the mean over the runs of a target; CPU per transaction is the CPU
	// summed over the rounds divided by the transactions summed over them;
	// the CPU ratio of each round follows in brackets.
	row := func(placement, pin string) {
		var direct []float64
		type sum struct {
			tps  float64
			txs  int64
			used time.Duration
		}
		var pp, ha sum
		var perRound []string
		add := func(s *sum, port, pid int) (perTx float64) {
			tps, txs, used := run(port, pid, pin)
			s.tps += tps
			s.txs += txs
			s.used += used
			return float64(used) / float64(txs)
		}
		for r := range rounds {
			tps, _, _ := run(pg.Port, 0, pin)
			direct = append(direct, tps)
			var ppTx, haTx float64
			if r%2 == 0 {
				ppTx = add(&pp, proxyPort, proxyPID)
				haTx = add(&ha, haPort, haPID)
			} else {
				haTx = add(&ha, haPort, haPID)
				ppTx = add(&pp, proxyPort, proxyPID)
			}
			perRound = append(perRound, fmt.Sprintf("%.2f", ppTx/haTx))
		}
		tps, _, _ := run(pg.Port, 0, pin)
		direct = append(direct, tps)
		var directMean float64
		for _, d := range direct {
			directMean += d
		}
		directMean /= float64(len(direct))
		ppTPS, haTPS := pp.tps/float64(rounds), ha.tps/float64(rounds)
		ppCPU := pp.used / time.Duration(pp.txs)
		haCPU := ha.used / time.Duration(ha.txs)
		cpuRatio := float64(pp.used) / float64(pp.txs) / (float64(ha.used) / float64(ha.txs))
		t.Logf("proxybench: | %s | %.0f (%.0f to %.0f) | %.0f | %.3f | %.0f | %.3f | %.3f | %.1f | %.1f | %.2f (%s) |",
			placement, directMean, slices.Min(direct), slices.Max(direct), ppTPS, ppTPS/directMean, haTPS, haTPS/directMean, ppTPS/haTPS,
			micros(ppCPU), micros(haCPU), cpuRatio, strings.Join(perRound, ", "))
	}
	t.Logf("proxybench: pgbench -S -M prepared -c %s -j 2 -T %s, %d rounds", clients, secs, rounds)
	row("shared cores", "")
	if runtime.NumCPU() < 2 {
		return
	}
	// Next to the applications the proxy takes no CPU from PostgreSQL.
	// Model that: PostgreSQL (the postmaster and every process it has or
	// forks) and pgbench on CPU 0, the proxies on CPU 1.
	pinTree(t, pg.PostmasterPID(t), 0)
	pinTree(t, proxyPID, 1)
	pinTree(t, haPID, 1)
	row("PostgreSQL and pgbench on CPU 0, proxy on CPU 1", "0")
}

// micros is d in µs.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// startProxyBinary runs the built patroni_proxy as a child of the test
// with one port "master" (role leader) of a cluster whose Patroni is
// patroniURL, waits until /ready answers 200, and returns the port and the
// child's pid.
func startProxyBinary(t *testing.T, patroniURL string) (int, int) {
	t.Helper()
	bin := os.Getenv("PROXY_BENCH_BIN")
	if bin == "" {
		bin = "../../bin/patroni_proxy"
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "the benchmark runs the built binary: make build (or set PROXY_BENCH_BIN)")
	port, api := freeTCPPort(t), freeTCPPort(t)
	cfg := fmt.Sprintf(`listen_address: "127.0.0.1:%d"
clusters:
  bench:
    hosts: [%q]
    ports:
      master:
        listen: "127.0.0.1:%d"
        roles: ["leader"]
`, api, patroniURL, port)
	cmd, out := startChild(t, "patroni_proxy.yaml", cfg, "", bin, "--log-level", "warn")
	ready := fmt.Sprintf("http://127.0.0.1:%d/ready", api)
	require.Eventually(t, func() bool {
		resp, err := http.Get(ready)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "patroni_proxy not ready: %s", out.String())
	return port, cmd.Process.Pid
}

// freeTCPPort returns a 127.0.0.1 port that was free a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return tcpPort(ln.Addr())
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

// startHAProxy runs HAProxy in TCP mode in front of host:port, in the
// foreground as a child of the test, and returns its listen port and pid.
func startHAProxy(t *testing.T, host string, port int) (int, int) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
	}
	listen := freeTCPPort(t)
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
	cmd, out := startChild(t, "haproxy.cfg", cfg, "HAProxy is needed for the comparison: apt-get install haproxy", bin, "-db", "-f")
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

// startChild writes cfg to a temporary file named name and starts bin with
// args and that file's path last, as a child that dies with the test (and
// is killed at cleanup); its output collects in the returned buffer. hint
// says how to get bin when it does not start.
func startChild(t *testing.T, name, cfg, hint, bin string, args ...string) (*exec.Cmd, *testbuf.Buffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	cmd := exec.Command(bin, append(args, path)...)
	out := &testbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start(), hint)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}
