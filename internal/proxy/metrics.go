package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/doorman-go/doorman/internal/patroni"
)

// Metrics are the proxy's Prometheus series. NewMetrics registers them on
// the registry it is given; nothing is registered globally.
type Metrics struct {
	Connections       *prometheus.GaugeVec   // cluster, port, backend
	ConnectionsTotal  *prometheus.CounterVec // cluster, port, backend
	Refused           *prometheus.CounterVec // cluster, port, reason
	Held              *prometheus.CounterVec // cluster, port, result
	Holding           *prometheus.GaugeVec   // cluster, port
	ConnectErrors     *prometheus.CounterVec // cluster, port, backend
	AcceptErrors      *prometheus.CounterVec // cluster, port
	Cut               *prometheus.CounterVec // cluster, port, reason
	RelayErrors       *prometheus.CounterVec // cluster, port
	PortOpen          *prometheus.GaugeVec   // cluster, port
	Updates           *prometheus.CounterVec // cluster
	UpdateErrors      *prometheus.CounterVec // cluster
	PatroniErrors     *prometheus.CounterVec // cluster, url
	Members           *prometheus.GaugeVec   // cluster, role, state
	Leaders           *prometheus.GaugeVec   // cluster
	LeaderChecks      *prometheus.CounterVec // cluster, result
	Suspicions        *prometheus.CounterVec // cluster, trigger
	FastRefreshes     *prometheus.CounterVec // cluster
	FastPolling       *prometheus.GaugeVec   // cluster
	TopologyAge       *prometheus.GaugeVec   // cluster
	TopologyStale     *prometheus.GaugeVec   // cluster
	ReloadSuccessful  prometheus.Gauge
	ReloadSuccessTime prometheus.Gauge
	ReloadFailures    prometheus.Counter
}

// NewMetrics creates the series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const ns = "patroni_proxy"
	gv := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	m := &Metrics{
		Connections:       gv("connections", "Open client connections per port and backend (host:port).", "cluster", "port", "backend"),
		ConnectionsTotal:  cv("connections_total", "Client connections forwarded per port and backend.", "cluster", "port", "backend"),
		Refused:           cv("refused_connections_total", "Client connections refused, by reason.", "cluster", "port", "reason"),
		Held:              cv("held_connections_total", "New connections held by hold_timeout while the port could not route them, by result (routed, refused: the timeout passed).", "cluster", "port", "result"),
		Holding:           gv("holding_connections", "New connections held now, waiting for a topology that routes them.", "cluster", "port"),
		ConnectErrors:     cv("backend_connect_errors_total", "Failed connects to a backend (the next backend is tried).", "cluster", "port", "backend"),
		AcceptErrors:      cv("accept_errors_total", "Failed accepts of client connections (EMFILE and the like: the connection waits in the listen queue; the port retries after 5 ms, doubling up to 1 s).", "cluster", "port"),
		RelayErrors:       cv("relay_errors_total", "Connections closed because no event loop could take them over (a failed dup or epoll_ctl) or because their event loop failed.", "cluster", "port"),
		Cut:               cv("cut_connections_total", "Connections closed by the proxy because their backend stopped qualifying, by reason.", "cluster", "port", "reason"),
		PortOpen:          gv("port_open", "1 while the port accepts new connections, 0 while it refuses them.", "cluster", "port"),
		Updates:           cv("cluster_updates_total", "Topologies applied from Patroni /cluster.", "cluster"),
		UpdateErrors:      cv("cluster_update_errors_total", "Topology fetches where every Patroni URL failed.", "cluster"),
		PatroniErrors:     cv("patroni_request_errors_total", "Failed GET /cluster requests per Patroni URL.", "cluster", "url"),
		Members:           gv("members", "Members in the last topology, by Patroni role and state.", "cluster", "role", "state"),
		Leaders:           gv("leaders", "Members with role leader in the last topology (1 is the only healthy value).", "cluster"),
		LeaderChecks:      cv("leader_checks_total", "Asks to a leader's own /patroni whether it runs out of recovery, by result (promoted, in_recovery, error; for a leader restarting in place: live_primary, not_live).", "cluster", "result"),
		Suspicions:        cv("leader_suspicions_total", "Evidence from the proxy's own traffic that the leader may have changed, by trigger (connect_failed, server_closed).", "cluster", "trigger"),
		FastRefreshes:     cv("fast_refreshes_total", "Extra GET /cluster made because of that evidence (at most one per 250 ms per cluster).", "cluster"),
		FastPolling:       gv("fast_polling", "1 while the cluster is re-polled fast after such evidence, until its topology is stable.", "cluster"),
		TopologyAge:       gv("topology_age_seconds", "Age of the last applied topology.", "cluster"),
		TopologyStale:     gv("topology_stale", "1 while the topology is older than max_topology_age (new connections refused).", "cluster"),
		ReloadSuccessful:  prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "config_last_reload_successful", Help: "Whether the last configuration reload succeeded."}),
		ReloadSuccessTime: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "config_last_reload_success_timestamp_seconds", Help: "Time of the last successful configuration load."}),
		ReloadFailures:    prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "config_reload_failures_total", Help: "Configuration reloads that failed (the file did not load, or the proxy could not apply it); the previous configuration stayed."}),
	}
	reg.MustRegister(m.ReloadSuccessful, m.ReloadSuccessTime, m.ReloadFailures)
	return m
}

// memberKey is a role and state pair of the members gauge.
type memberKey struct{ role, state string }

// setMembers sets the members gauge of cluster to the counts of members
// by role and state, and deletes the pairs of prev (the last call's
// result, which it returns) that are gone. A pair present before and
// after is set, never deleted and counted up again, so a scrape during an
// update never misses it.
func setMembers(v *prometheus.GaugeVec, cluster string, prev map[memberKey]int, members []patroni.Member) map[memberKey]int {
	counts := make(map[memberKey]int, len(prev))
	for _, mem := range members {
		counts[memberKey{string(mem.Role), string(mem.State)}]++
	}
	for k := range prev {
		if _, ok := counts[k]; !ok {
			v.DeleteLabelValues(cluster, k.role, k.state)
		}
	}
	for k, n := range counts {
		v.WithLabelValues(cluster, k.role, k.state).Set(float64(n))
	}
	return counts
}
