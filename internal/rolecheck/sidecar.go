package rolecheck

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// DefaultCacheInterval is how long the sidecar reuses one probe result.
const DefaultCacheInterval = time.Second

// SidecarConfig configures a Sidecar.
type SidecarConfig struct {
	// Options says how to reach PostgreSQL; Role is ignored (each endpoint
	// has its own) and MaxLag is the default limit of /replica and
	// /read-only when the request has no ?lag=.
	Options       Options
	CacheInterval time.Duration                                 // DefaultCacheInterval if 0
	Logger        *zap.Logger                                   // zap.NewNop() if nil
	Registry      *prometheus.Registry                          // a new registry if nil
	Now           func() time.Time                              // time.Now if nil
	Probe         func(context.Context, Options) (State, error) // Probe with lag if nil; for tests
}

// Sidecar answers Patroni-shaped health endpoints from direct checks. One
// probe runs per cache interval however many requests arrive: the first
// request after expiry runs it, concurrent ones wait for its result. Errors
// are cached too, so a storm against a dead server does not hammer it.
type Sidecar struct {
	cfg     SidecarConfig
	metrics *Metrics
	mux     *http.ServeMux

	mu       sync.Mutex    // guards the fields below
	cached   probeResult   // last result
	inflight chan struct{} // closed when the running probe ends; nil if none
}

type probeResult struct {
	st  State
	err error
	at  time.Time
	ok  bool // false until the first probe ended
}

// NewSidecar validates cfg and builds the handler.
func NewSidecar(cfg SidecarConfig) (*Sidecar, error) {
	o, err := cfg.Options.Normalize()
	if err != nil {
		return nil, fmt.Errorf("sidecar options: %w", err)
	}
	cfg.Options = o
	if cfg.CacheInterval <= 0 {
		cfg.CacheInterval = DefaultCacheInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Probe == nil {
		cfg.Probe = func(ctx context.Context, o Options) (State, error) { return Probe(ctx, o, true) }
	}
	s := &Sidecar{cfg: cfg, metrics: NewMetrics(cfg.Registry), mux: http.NewServeMux()}
	for _, ep := range endpoints {
		s.mux.Handle("/"+ep.path, s.endpoint(ep))
	}
	s.mux.Handle("/metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/liveness", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return s, nil
}

// Handler is the HTTP handler with every endpoint.
func (s *Sidecar) Handler() http.Handler { return s.mux }

// Metrics returns the sidecar's metrics.
func (s *Sidecar) Metrics() *Metrics { return s.metrics }

// State returns the cached probe result, probing when it is older than the
// cache interval. ctx bounds only the wait: the probe itself runs with the
// check timeout so that one impatient client cannot fail it for the others.
func (s *Sidecar) State(ctx context.Context) (State, error) {
	for {
		s.mu.Lock()
		if r := s.cached; r.ok && s.cfg.Now().Sub(r.at) < s.cfg.CacheInterval {
			s.mu.Unlock()
			s.metrics.CacheHits.Inc()
			return r.st, r.err
		}
		if wait := s.inflight; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return State{}, fmt.Errorf("wait for probe: %w", ctx.Err())
			}
		}
		done := make(chan struct{})
		s.inflight = done
		s.mu.Unlock()
		return s.probe(done)
	}
}

// probe runs one probe, caches and publishes its result and wakes waiters.
func (s *Sidecar) probe(done chan struct{}) (State, error) {
	st, err := s.cfg.Probe(context.Background(), s.cfg.Options)
	s.metrics.observe(st, err)
	if err != nil {
		s.cfg.Logger.Warn("probe failed", zap.String("server", s.cfg.Options.Addr()), zap.Error(err))
	} else {
		s.cfg.Logger.Debug("probe", zap.String("server", st.Addr), zap.String("role", string(st.Role())),
			zap.Int64("lag_bytes", st.LagBytes), zap.Duration("took", st.Took))
	}
	s.mu.Lock()
	s.cached = probeResult{st: st, err: err, at: s.cfg.Now(), ok: true}
	s.inflight = nil
	s.mu.Unlock()
	close(done)
	return st, err
}
