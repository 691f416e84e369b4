package rolecheck

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the sidecar's Prometheus metrics.
type Metrics struct {
	Probes        *prometheus.CounterVec
	ProbeDuration prometheus.Histogram
	Requests      *prometheus.CounterVec
	CacheHits     prometheus.Counter
	Up            prometheus.Gauge
	InRecovery    prometheus.Gauge
	LagBytes      prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgrole_check_probes_total",
			Help: "Connections made to PostgreSQL to learn its role, by result (primary, replica, error).",
		}, []string{"result"}),
		ProbeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pgrole_check_probe_duration_seconds",
			Help:    "Duration of one probe: connect, log in, learn the role, Terminate.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgrole_check_http_requests_total",
			Help: "Health check requests answered, by endpoint and HTTP status code.",
		}, []string{"endpoint", "code"}),
		CacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pgrole_check_cache_hits_total",
			Help: "Requests answered from the cached probe result (including ones that waited for a probe in flight).",
		}),
		Up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pgrole_check_up",
			Help: "1 if the last probe reached PostgreSQL and learnt its role, else 0.",
		}),
		InRecovery: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pgrole_check_in_recovery",
			Help: "1 if the last successful probe found a replica (in recovery), 0 for a primary.",
		}),
		LagBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pgrole_check_replication_lag_bytes",
			Help: "Replay lag of the replica in bytes at the last successful probe; -1 if unknown, 0 on a primary.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Probes, m.ProbeDuration, m.Requests, m.CacheHits, m.Up, m.InRecovery, m.LagBytes)
	}
	return m
}

func (m *Metrics) observe(st State, err error) {
	m.ProbeDuration.Observe(st.Took.Seconds())
	if err != nil {
		m.Probes.WithLabelValues("error").Inc()
		m.Up.Set(0)
		return
	}
	m.Probes.WithLabelValues(string(st.Role())).Inc()
	m.Up.Set(1)
	if st.InRecovery {
		m.InRecovery.Set(1)
	} else {
		m.InRecovery.Set(0)
	}
	m.LagBytes.Set(float64(st.LagBytes))
}
