package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/doorman-go/doorman/internal/procnet"
)

var socketsDesc = prometheus.NewDesc("pg_doorman_sockets",
	"Sockets of the pg_doorman process by type: tcp (IPv4 TCP), tcp6 (IPv6 TCP), unix (unix domain) and unknown (any other, e.g. UDP). Linux only; read from /proc at scrape time (SHOW SOCKETS has them by state).",
	[]string{"type"}, nil)

// socketCollector reads /proc at scrape time. Off Linux, or when /proc
// cannot be read, it exports nothing (and the scrape still succeeds).
type socketCollector struct {
	read func() (procnet.Counts, error)
}

func newSocketCollector() socketCollector {
	return socketCollector{read: func() (procnet.Counts, error) { return procnet.Read("/proc") }}
}

func (socketCollector) Describe(ch chan<- *prometheus.Desc) { ch <- socketsDesc }

func (c socketCollector) Collect(ch chan<- prometheus.Metric) {
	n, err := c.read()
	if err != nil {
		return
	}
	for _, v := range []struct {
		typ string
		n   int
	}{
		{"tcp", n.TCP.Total()}, {"tcp6", n.TCP6.Total()}, {"unix", n.Unix.Total()}, {"unknown", n.Unknown},
	} {
		ch <- prometheus.MustNewConstMetric(socketsDesc, prometheus.GaugeValue, float64(v.n), v.typ)
	}
}
