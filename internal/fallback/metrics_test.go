package fallback

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func counterValue(t *testing.T, v *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	return testutil.ToFloat64(v.WithLabelValues(labels...))
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeNodes(), nil)
	m := e.metrics
	hostIs := func(host string) {
		t.Helper()
		want := ""
		if host != "" {
			want = `
# HELP pg_doorman_fallback_host 1 for the host:port new server connections of the pool currently fall back to.
# TYPE pg_doorman_fallback_host gauge
pg_doorman_fallback_host{host="` + host + `",pool="db",port="5432"} 1
`
		}
		require.NoError(t, testutil.CollectAndCompare(m.hosts, strings.NewReader(want)))
	}

	e.net.set(syncAddr, succeed())
	e.net.set(leaderAddr, hang()) // loses every race without failing
	e.mustFallback(t, syncAddr)
	require.InDelta(t, 1, testutil.ToFloat64(m.active.WithLabelValues("db")), 0)
	hostIs("10.0.0.3")
	e.mustFallback(t, syncAddr)
	require.InDelta(t, 1, counterValue(t, m.cacheHits, "db"), 0)

	e.net.set(syncAddr, refuse())
	e.net.set(replicaAddr, succeed())
	e.mustFallback(t, replicaAddr)
	hostIs("10.0.0.2") // the old host's series went in the same step
	require.InDelta(t, 2, counterValue(t, m.cacheHits, "db"), 0)
	require.InDelta(t, 1, counterValue(t, m.failures, "db", "connect_error"), 0)
	require.InDelta(t, 3, counterValue(t, m.connections, "db", "success"), 0)
	require.InDelta(t, 2, counterValue(t, m.apiRequests, "db"), 0)
	require.Equal(t, 1, testutil.CollectAndCount(m.apiDuration))

	e.net.set(local.Address, succeed())
	e.clock.Advance(30 * time.Second)
	_, _, err := e.connect(context.Background())
	require.NoError(t, err)
	require.InDelta(t, 0, testutil.ToFloat64(m.active.WithLabelValues("db")), 0)
	hostIs("")

	// Patroni answering 500: an API error and a failed fallback
	e.net.set(local.Address, refuse())
	e.srv.SetStatus(500)
	_, _, err = e.connect(context.Background())
	require.Error(t, err)
	require.InDelta(t, 1, counterValue(t, m.apiErrors, "db"), 0)
	require.InDelta(t, 1, counterValue(t, m.connections, "db", "failure"), 0)
	require.InDelta(t, 3, counterValue(t, m.apiRequests, "db"), 0)

	m.RemovePool("db")
	require.Zero(t, testutil.CollectAndCount(m.connections))
	hostIs("")
}

func TestMetricsLint(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.PatroniRequest("db", time.Millisecond, nil)
	m.FallbackConnection("db", true)
	m.FallbackActive("db", true)
	m.FallbackHost("db", "10.0.0.2:5432")
	m.CacheHit("db")
	m.CandidateFailure("db", ReasonTimeout)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 7, n) // errors_total has no series yet
}
