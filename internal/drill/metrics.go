package drill

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts attempts and reconciliation problems; a nil *Metrics
// counts nothing.
type Metrics struct {
	Attempts   *prometheus.CounterVec // outcome, category ("" for acknowledged)
	Reconciles *prometheus.CounterVec // result: ok, retry, failed
}

// NewMetrics registers the drill's counters with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "doorman_drill_attempts_total",
			Help: "Write attempts of the failover drill by outcome and failure category.",
		}, []string{"outcome", "category"}),
		Reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "doorman_drill_reconcile_total",
			Help: "Reconciliation lookups against the primary by result (ok, retry, failed).",
		}, []string{"result"}),
	}
	reg.MustRegister(m.Attempts, m.Reconciles)
	return m
}

func (m *Metrics) attempt(e Event) {
	if m != nil {
		m.Attempts.WithLabelValues(string(e.Outcome), e.Category).Inc()
	}
}

func (m *Metrics) reconcile(result string) {
	if m != nil {
		m.Reconciles.WithLabelValues(result).Inc()
	}
}
