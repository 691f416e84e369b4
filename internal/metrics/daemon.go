package metrics

import (
	rtmetrics "runtime/metrics"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/doorman-go/doorman/internal/daemon"
)

// Process-wide families.
var (
	totalMemoryDesc = prometheus.NewDesc("pg_doorman_total_memory",
		"Total memory obtained from the OS by the Go runtime of pg_doorman, in bytes.", nil, nil)
	connectionCountDesc = prometheus.NewDesc("pg_doorman_connection_count",
		"Client connections since start by type: plain, tls, cancel and total (their sum). A gauge for compatibility; prefer pg_doorman_connections_total.",
		[]string{"type"}, nil)
	connectionsTotalDesc = prometheus.NewDesc("pg_doorman_connections_total",
		"Client connections since start by type: plain, tls, cancel and total (their sum).",
		[]string{"type"}, nil)
	clientConnectionsDesc = prometheus.NewDesc("pg_doorman_client_connections",
		"Open client connections, including those still logging in and admin console sessions.", nil, nil)
	reloadSuccessDesc = prometheus.NewDesc("pg_doorman_config_last_reload_successful",
		"Whether the last configuration reload succeeded (1) or failed and the previous configuration stayed (0).", nil, nil)
	reloadsDesc = prometheus.NewDesc("pg_doorman_config_reloads_total",
		"Successful configuration reloads since start.", nil, nil)
	reloadFailuresDesc = prometheus.NewDesc("pg_doorman_config_reload_failures_total",
		"Configuration reloads since start that failed: the previous configuration stayed, or the client TLS certificate could not be loaded again.", nil, nil)
	memoryBudgetDesc = prometheus.NewDesc("pg_doorman_memory_budget_bytes",
		"max_memory_usage: bytes of message buffers held now (used), the most held at once since start (peak) and the limit (limit, 0 = none).",
		[]string{"type"}, nil)
	memoryRefusalsDesc = prometheus.NewDesc("pg_doorman_memory_budget_refusals_total",
		"Messages that did not fit max_memory_usage (then streamed, or the request refused).", nil, nil)
	upgradesDesc = prometheus.NewDesc("pg_doorman_binary_upgrades_total",
		"Binary upgrades this process started (handed over to a new process) and aborted (the new process refused the config or did not come up).",
		[]string{"result"}, nil)
	upgradeClientsDesc = prometheus.NewDesc("pg_doorman_binary_upgrade_clients_total",
		"Clients of binary upgrades: migrated (sent to the new process), migrate_failed (stayed here), drained (told to reconnect: TLS, session mode, admin, daemon mode), force_closed (still here at shutdown_timeout: closed with 58006), received and receive_failed (in the new process).",
		[]string{"result"}, nil)
	buildInfoDesc = prometheus.NewDesc("pg_doorman_build_info",
		"Always 1; the version label is the running pg_doorman version.", []string{"version"}, nil)
)

// daemonCollector reads the daemon's process-wide state at scrape time.
type daemonCollector struct{ m *Metrics }

func (c *daemonCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		totalMemoryDesc, connectionCountDesc, connectionsTotalDesc, clientConnectionsDesc,
		reloadSuccessDesc, reloadsDesc, reloadFailuresDesc, buildInfoDesc, memoryBudgetDesc, memoryRefusalsDesc,
		upgradesDesc, upgradeClientsDesc,
	} {
		ch <- d
	}
}

func (c *daemonCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	ch <- prometheus.MustNewConstMetric(totalMemoryDesc, prometheus.GaugeValue, runtimeTotalMemory())
	kinds := [...]struct {
		label string
		n     uint64
	}{{ConnPlain, m.plain.Load()}, {ConnTLS, m.tls.Load()}, {ConnCancel, m.cancel.Load()}}
	total := m.other.Load()
	for _, k := range kinds {
		total += k.n
		ch <- prometheus.MustNewConstMetric(connectionCountDesc, prometheus.GaugeValue, float64(k.n), k.label)
		ch <- prometheus.MustNewConstMetric(connectionsTotalDesc, prometheus.CounterValue, float64(k.n), k.label)
	}
	ch <- prometheus.MustNewConstMetric(connectionCountDesc, prometheus.GaugeValue, float64(total), "total")
	ch <- prometheus.MustNewConstMetric(connectionsTotalDesc, prometheus.CounterValue, float64(total), "total")
	ch <- prometheus.MustNewConstMetric(clientConnectionsDesc, prometheus.GaugeValue, float64(m.d.ConnCount()))
	reloads, lastFailed := m.d.ReloadStats()
	ch <- prometheus.MustNewConstMetric(reloadSuccessDesc, prometheus.GaugeValue, boolFloat(!lastFailed))
	ch <- prometheus.MustNewConstMetric(reloadsDesc, prometheus.CounterValue, float64(reloads))
	ch <- prometheus.MustNewConstMetric(reloadFailuresDesc, prometheus.CounterValue, float64(m.d.ReloadFailures()))
	ch <- prometheus.MustNewConstMetric(buildInfoDesc, prometheus.GaugeValue, 1, daemon.Version)
	b := m.d.Memory
	ch <- prometheus.MustNewConstMetric(memoryBudgetDesc, prometheus.GaugeValue, float64(b.Used()), "used")
	ch <- prometheus.MustNewConstMetric(memoryBudgetDesc, prometheus.GaugeValue, float64(b.Peak()), "peak")
	ch <- prometheus.MustNewConstMetric(memoryBudgetDesc, prometheus.GaugeValue, float64(max(b.Limit(), 0)), "limit")
	ch <- prometheus.MustNewConstMetric(memoryRefusalsDesc, prometheus.CounterValue, float64(b.Refusals()))
	u := &m.d.UpgradeStats
	for _, v := range []struct {
		label string
		n     uint64
	}{{"started", u.Started.Load()}, {"aborted", u.Aborted.Load()}} {
		ch <- prometheus.MustNewConstMetric(upgradesDesc, prometheus.CounterValue, float64(v.n), v.label)
	}
	for _, v := range []struct {
		label string
		n     uint64
	}{{"migrated", u.Migrated.Load()}, {"migrate_failed", u.MigrateFailed.Load()}, {"drained", u.Drained.Load()},
		{"force_closed", u.ForceClosed.Load()}, {"received", u.Received.Load()}, {"receive_failed", u.ReceiveFailed.Load()}} {
		ch <- prometheus.MustNewConstMetric(upgradeClientsDesc, prometheus.CounterValue, float64(v.n), v.label)
	}
}

// runtimeTotalMemory is what the Go runtime has mapped from the OS: the
// closest thing to the allocator total the Rust pg_doorman reports. Reading
// runtime/metrics does not stop the world, unlike runtime.ReadMemStats.
func runtimeTotalMemory() float64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64())
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
