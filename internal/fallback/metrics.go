package fallback

import (
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics receives the fallback events of every Dialer. Implementations must
// be safe for concurrent use and must not block.
type Metrics interface {
	// PatroniRequest is one GET /cluster round (all URLs in parallel).
	PatroniRequest(pool string, dur time.Duration, err error)
	// FallbackConnection is the outcome of one fallback attempt.
	FallbackConnection(pool string, ok bool)
	// FallbackActive reports whether the local server is in its cooldown.
	FallbackActive(pool string, active bool)
	// FallbackHost makes addr (host:port) the pool's one fallback host,
	// replacing the previous one in the same step; "" clears it.
	FallbackHost(pool, addr string)
	// CacheHit is a round that used the cached fallback host.
	CacheHit(pool string)
	// CandidateFailure is one rejected candidate.
	CandidateFailure(pool string, reason Reason)
}

type nopMetrics struct{}

func (nopMetrics) PatroniRequest(string, time.Duration, error) {}
func (nopMetrics) FallbackConnection(string, bool)             {}
func (nopMetrics) FallbackActive(string, bool)                 {}
func (nopMetrics) FallbackHost(string, string)                 {}
func (nopMetrics) CacheHit(string)                             {}
func (nopMetrics) CandidateFailure(string, Reason)             {}

// PromMetrics is the Prometheus implementation of Metrics.
type PromMetrics struct {
	apiRequests *prometheus.CounterVec
	apiErrors   *prometheus.CounterVec
	apiDuration *prometheus.HistogramVec
	connections *prometheus.CounterVec
	active      *prometheus.GaugeVec
	cacheHits   *prometheus.CounterVec
	failures    *prometheus.CounterVec
	hosts       *hostCollector
}

// NewMetrics registers the fallback families on reg:
// pg_doorman_patroni_api_requests_total{pool},
// pg_doorman_patroni_api_errors_total{pool},
// pg_doorman_patroni_api_duration_seconds{pool},
// pg_doorman_fallback_connections_total{pool,result="success"|"failure"},
// pg_doorman_fallback_active{pool}, pg_doorman_fallback_host{pool,host,port},
// pg_doorman_fallback_cache_hits_total{pool},
// pg_doorman_fallback_candidate_failures_total{pool,reason}.
func NewMetrics(reg prometheus.Registerer) *PromMetrics {
	m := &PromMetrics{
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pg_doorman_patroni_api_requests_total",
			Help: "GET /cluster rounds sent to the Patroni REST API (all URLs in parallel count once)."}, []string{"pool"}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pg_doorman_patroni_api_errors_total",
			Help: "GET /cluster rounds in which no Patroni URL answered usefully."}, []string{"pool"}),
		apiDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pg_doorman_patroni_api_duration_seconds",
			Help:    "Duration of GET /cluster rounds.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"pool"}),
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pg_doorman_fallback_connections_total",
			Help: "Fallback connection attempts by result."}, []string{"pool", "result"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pg_doorman_fallback_active",
			Help: "1 while the local server is in its fallback cooldown."}, []string{"pool"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pg_doorman_fallback_cache_hits_total",
			Help: "Fallback rounds that reused the cached fallback host without asking Patroni."}, []string{"pool"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pg_doorman_fallback_candidate_failures_total",
			Help: "Fallback candidates rejected, by reason."}, []string{"pool", "reason"}),
		hosts: &hostCollector{current: map[string]string{}, desc: prometheus.NewDesc("pg_doorman_fallback_host",
			"1 for the host:port new server connections of the pool currently fall back to.", []string{"pool", "host", "port"}, nil)},
	}
	reg.MustRegister(m.apiRequests, m.apiErrors, m.apiDuration, m.connections, m.active, m.cacheHits, m.failures, m.hosts)
	return m
}

// PatroniRequest implements Metrics.
func (m *PromMetrics) PatroniRequest(pool string, dur time.Duration, err error) {
	m.apiRequests.WithLabelValues(pool).Inc()
	m.apiDuration.WithLabelValues(pool).Observe(dur.Seconds())
	if err != nil {
		m.apiErrors.WithLabelValues(pool).Inc()
	}
}

// FallbackConnection implements Metrics.
func (m *PromMetrics) FallbackConnection(pool string, ok bool) {
	result := "failure"
	if ok {
		result = "success"
	}
	m.connections.WithLabelValues(pool, result).Inc()
}

// FallbackActive implements Metrics.
func (m *PromMetrics) FallbackActive(pool string, active bool) {
	v := 0.0
	if active {
		v = 1
	}
	m.active.WithLabelValues(pool).Set(v)
}

// FallbackHost implements Metrics: a scrape sees the old host or the new
// one, never both.
func (m *PromMetrics) FallbackHost(pool, addr string) {
	m.hosts.mu.Lock()
	defer m.hosts.mu.Unlock()
	if addr == "" {
		delete(m.hosts.current, pool)
		return
	}
	m.hosts.current[pool] = addr
}

// CacheHit implements Metrics.
func (m *PromMetrics) CacheHit(pool string) { m.cacheHits.WithLabelValues(pool).Inc() }

// CandidateFailure implements Metrics.
func (m *PromMetrics) CandidateFailure(pool string, reason Reason) {
	m.failures.WithLabelValues(pool, reason.String()).Inc()
}

// RemovePool deletes every series of pool (after a reload dropped it).
func (m *PromMetrics) RemovePool(pool string) {
	l := prometheus.Labels{"pool": pool}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.apiRequests, m.apiErrors, m.apiDuration, m.connections, m.active, m.cacheHits, m.failures,
	} {
		v.DeletePartialMatch(l)
	}
	m.FallbackHost(pool, "")
}

// hostCollector exports pg_doorman_fallback_host from one map so that
// replacing a pool's host is a single step for scrapes.
type hostCollector struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	current map[string]string // pool → host:port
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pool, addr := range c.current {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			host, port = addr, ""
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, pool, host, port)
	}
}
