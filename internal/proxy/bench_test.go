package proxy

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/pgtest"
)

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// TestPgbenchRatio compares pgbench -S through the proxy with pgbench -S
// straight to PostgreSQL (the "make bench" number; aim: >= 0.95). It runs
// only with PROXY_BENCH=1; PROXY_BENCH_SECONDS sets each run's length.
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
	direct1 := run(pg.Port)
	proxied := run(tcpPort(h.addr("master")))
	direct2 := run(pg.Port)
	direct := (direct1 + direct2) / 2
	t.Logf("pgbench -S -c 8: direct %.0f tps (runs %.0f, %.0f), through patroni_proxy %.0f tps, ratio %.3f",
		direct, direct1, direct2, proxied, proxied/direct)
}
