package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/doorman-go/doorman/internal/daemon"
)

var (
	coordGaugeDesc = prometheus.NewDesc("pg_doorman_pool_coordinator",
		"Pool coordinator state of a database with max_db_connections: connections (permits held), reserve_in_use, max_connections, reserve_pool_size.",
		[]string{"type", "database"}, nil)
	coordTotalDesc = prometheus.NewDesc("pg_doorman_pool_coordinator_total",
		"Pool coordinator events of a database: evictions (idle connections closed for another user), reserve_acquisitions, exhaustions (requests refused).",
		[]string{"type", "database"}, nil)
)

// coordinatorCollector reads the coordinators at scrape time.
type coordinatorCollector struct{ d *daemon.Daemon }

func (c coordinatorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- coordGaugeDesc
	ch <- coordTotalDesc
}

func (c coordinatorCollector) Collect(ch chan<- prometheus.Metric) {
	for _, co := range c.d.Pools.Coordinators() {
		s := co.Snapshot()
		for _, m := range s.Gauges() {
			ch <- prometheus.MustNewConstMetric(coordGaugeDesc, prometheus.GaugeValue, m.Value, m.Type, s.Database)
		}
		for _, m := range s.Totals() {
			ch <- prometheus.MustNewConstMetric(coordTotalDesc, prometheus.CounterValue, m.Value, m.Type, s.Database)
		}
	}
}
