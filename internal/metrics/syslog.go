package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/doorman-go/doorman/internal/logging"
)

// syslogFailuresDesc is present only while pg_doorman logs to syslog
// (general.syslog_prog_name): RegisterSyslog adds it.
var syslogFailuresDesc = prometheus.NewDesc("pg_doorman_syslog_send_failures_total",
	"Log lines the syslog daemon did not take, each written to stderr instead, by reason: busy (its queue was full), unreachable (no daemon took the line after one redial).",
	[]string{"reason"}, nil)

// RegisterSyslog exports c, the lines the syslog logger could not send
// (logging.Options.SyslogCounts). cmd/pg_doorman calls it when it logs to
// syslog; the logger exists before the exporter, so the counts are read
// at scrape time.
func (m *Metrics) RegisterSyslog(c *logging.SyslogCounts) {
	m.reg.MustRegister(syslogCollector{c})
}

// syslogCollector reads a syslog logger's counts at scrape time.
type syslogCollector struct{ c *logging.SyslogCounts }

func (s syslogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- syslogFailuresDesc }

func (s syslogCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(syslogFailuresDesc, prometheus.CounterValue, float64(s.c.Busy.Load()), "busy")
	ch <- prometheus.MustNewConstMetric(syslogFailuresDesc, prometheus.CounterValue, float64(s.c.Unreachable.Load()), "unreachable")
}
