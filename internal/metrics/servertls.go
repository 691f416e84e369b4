package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/servertls"
)

var _ backend.TLSObserver = (*serverTLS)(nil)

// serverTLS holds the three server-side TLS series (seed 002, "Метрики
// серверного TLS"; the seed names them without listing them, so the names
// are ours). The backend package reports through backend.TLSObserver.
type serverTLS struct {
	open      atomic.Int64
	conns     prometheus.GaugeFunc
	handshake prometheus.Histogram
	errors    *prometheus.CounterVec
}

func newServerTLS() *serverTLS {
	s := &serverTLS{}
	s.conns = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pg_doorman_server_tls_connections",
		Help: "Open server connections to PostgreSQL that use TLS.",
	}, func() float64 { return float64(max(s.open.Load(), 0)) })
	s.handshake = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pg_doorman_server_tls_handshake_duration_seconds",
		Help:    "Duration of successful TLS handshakes with PostgreSQL, from the first ClientHello byte to the server's Finished.",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
	})
	s.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_server_tls_handshake_errors_total",
		Help: "Failed TLS set-ups with PostgreSQL by reason (refused, certificate, hostname, alert, handshake).",
	}, []string{"reason"})
	for _, r := range servertls.Reasons {
		s.errors.WithLabelValues(r)
	}
	return s
}

func (s *serverTLS) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.conns, s.handshake, s.errors}
}

func (s *serverTLS) TLSHandshakeDone(d time.Duration) { s.handshake.Observe(d.Seconds()) }
func (s *serverTLS) TLSHandshakeFailed(reason string) { s.errors.WithLabelValues(reason).Inc() }
func (s *serverTLS) TLSConnOpened()                   { s.open.Add(1) }
func (s *serverTLS) TLSConnClosed()                   { s.open.Add(-1) }
