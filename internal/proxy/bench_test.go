package proxy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/pgtest"
)

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

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
	run := func(port int) float64 {
		out, err := exec.Command(pgbench, "-S", "-n", "-M", "prepared", "-c", "8", "-j", "2", "-T", secs,
			"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "postgres").CombinedOutput()
		require.NoError(t, err, "%s", out)
		m := tpsRE.FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		tps, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return tps
	}
	haPort := startHAProxy(t, pg.Host, pg.Port)
	direct1 := run(pg.Port)
	proxied := run(tcpPort(h.addr("master")))
	ha := run(haPort)
	direct2 := run(pg.Port)
	direct := (direct1 + direct2) / 2
	t.Logf("pgbench -S -c 8: direct %.0f tps (runs %.0f, %.0f), through patroni_proxy %.0f tps, ratio %.3f; "+
		"through HAProxy (mode tcp) %.0f tps, ratio %.3f; patroni_proxy/HAProxy %.3f",
		direct, direct1, direct2, proxied, proxied/direct, ha, ha/direct, proxied/ha)
}

// startHAProxy runs HAProxy in TCP mode in front of host:port, in the
// foreground as a child of the test, and returns its listen port.
func startHAProxy(t *testing.T, host string, port int) int {
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
	return listen
}
