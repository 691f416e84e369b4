package pooler

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/authquery"
	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/leaderlock"
	"github.com/doorman-go/doorman/internal/patroni"
)

// key names a pool: a configured user, an auth_query user (passthrough)
// or the shared server_user pool of a dedicated auth_query.
type key struct {
	db, user  string
	dedicated bool
}

// Registry holds every pool of the running configuration.
type Registry struct {
	log *zap.Logger

	mu  sync.RWMutex
	cfg *config.Config
	// current is cfg, published at the end of Apply's critical section:
	// Config reads it without mu (a session reads it per query).
	current atomic.Pointer[config.Config]
	pools   map[key]*Pool
	coords  map[string]*coordinator.Coordinator // databases with max_db_connections

	resolvers                map[string]*authquery.Resolver // databases with auth_query
	dynCreated, dynCollected map[string]uint64              // auth_query pools per database

	fbMetrics atomic.Pointer[fallback.Metrics]
	tlsObs    atomic.Pointer[backend.TLSObserver]

	gate      atomic.Pointer[leaderlock.Gate] // nil without server_login_retry_patroni
	gateStats leaderlock.Stats
}

// LeaderLockStats are the answers of the local Patroni to the leader lock
// checks of server_login_retry_patroni, since start.
func (r *Registry) LeaderLockStats() *leaderlock.Stats { return &r.gateStats }

// leaderGate is the gate of server_login_retry_patroni; nil without it
// (or without a registry, in tests).
func (r *Registry) leaderGate() *leaderlock.Gate {
	if r == nil {
		return nil
	}
	return r.gate.Load()
}

// applyGate builds the gate for g when its URL or server_login_retry
// changed. Each check is bounded by patroni_api_timeout, at most 1 s: a
// client is waiting on it.
func (r *Registry) applyGate(g *config.General) {
	api := g.ServerLoginRetryPatroni
	if api == "" || g.ServerLoginRetry <= 0 {
		r.swapGate(nil)
		return
	}
	if old := r.gate.Load(); old != nil && old.API() == api && old.TTL() == g.ServerLoginRetry {
		return
	}
	timeout := min(g.PatroniAPITimeout, time.Second)
	if timeout <= 0 {
		timeout = time.Second
	}
	c, err := patroni.NewClient([]string{api}, patroni.ClientOptions{Timeout: timeout, Retries: -1})
	if err != nil { // config validation refuses such a URL; without it, no gate
		if r.log != nil {
			r.log.Error("server_login_retry_patroni disabled", zap.String("url", api), zap.Error(err))
		}
		r.swapGate(nil)
		return
	}
	r.swapGate(leaderlock.New(api, g.ServerLoginRetry, timeout, c, &r.gateStats))
}

// swapGate puts g in force and closes the gate it replaces, in the
// background: a check in flight may take up to its timeout.
func (r *Registry) swapGate(g *leaderlock.Gate) {
	if old := r.gate.Swap(g); old != nil {
		go old.Close()
	}
}

// SetServerTLSObserver sets who hears of server-side TLS handshakes and
// connections (the metrics exporter).
func (r *Registry) SetServerTLSObserver(o backend.TLSObserver) { r.tlsObs.Store(&o) }

// ServerTLSObserver returns what SetServerTLSObserver set, or nil.
func (r *Registry) ServerTLSObserver() backend.TLSObserver {
	if o := r.tlsObs.Load(); o != nil {
		return *o
	}
	return nil
}

// SetFallbackMetrics sets where the Patroni fallback dialers report.
func (r *Registry) SetFallbackMetrics(m fallback.Metrics) { r.fbMetrics.Store(&m) }

// FallbackMetrics returns what SetFallbackMetrics set, or nil.
func (r *Registry) FallbackMetrics() fallback.Metrics {
	if m := r.fbMetrics.Load(); m != nil {
		return *m
	}
	return nil
}

// NewRegistry builds the pools of cfg. No connection is opened yet.
func NewRegistry(cfg *config.Config, log *zap.Logger) *Registry {
	r := &Registry{log: log, pools: map[key]*Pool{}, coords: map[string]*coordinator.Coordinator{},
		resolvers: map[string]*authquery.Resolver{}, dynCreated: map[string]uint64{}, dynCollected: map[string]uint64{}}
	r.Apply(cfg)
	return r
}

// Config returns the configuration in force.
func (r *Registry) Config() *config.Config { return r.current.Load() }

// Lookup finds the pool of a configured (database, user). Database names
// are case-sensitive, as in PostgreSQL. Users known through auth_query are
// not found here: their logins go through AuthQuery and AuthQueryPool.
func (r *Registry) Lookup(db, user string) (*Pool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.pools[key{db: db, user: user}]
	if ok && p.dynamic {
		return nil, false
	}
	return p, ok
}

// HasDatabase reports whether a pool for db is configured.
func (r *Registry) HasDatabase(db string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.cfg.Pools[db]
	return ok
}

// Pools lists the pools sorted by database, then user.
func (r *Registry) Pools() []*Pool {
	r.mu.RLock()
	out := make([]*Pool, 0, len(r.pools))
	for _, p := range r.pools {
		out = append(out, p)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Database != out[j].Database {
			return out[i].Database < out[j].Database
		}
		return out[i].User < out[j].User
	})
	return out
}

// Apply switches to cfg: new pools are created, existing ones take their new
// settings and keep their connections, removed ones are closed (their busy
// connections close as clients release them).
func (r *Registry) Apply(cfg *config.Config) {
	r.mu.Lock()
	seen := map[key]bool{}
	for name, db := range cfg.Pools {
		for i := range db.Users {
			u := &db.Users[i]
			k := key{db: name, user: u.Username}
			seen[k] = true
			s := &Settings{General: &cfg.General, DB: db, User: u}
			if p, ok := r.pools[k]; ok && !p.dynamic {
				p.apply(s)
				continue
			}
			if p, ok := r.pools[k]; ok { // an auth_query user is now configured
				if u := p.coord.Swap(nil); u != nil {
					u.Unregister()
				}
				p.close()
			}
			r.pools[k] = newPool(s, r)
		}
	}
	var removed []*Pool
	for k, p := range r.pools {
		if p.dynamic && applyDynamicLocked(cfg, k, p) {
			continue
		}
		if !seen[k] {
			removed = append(removed, p)
			delete(r.pools, k)
			if u := p.coord.Swap(nil); u != nil {
				u.Unregister()
			}
		}
	}
	r.cfg = cfg
	r.applyGate(&cfg.General)
	r.applyCoordinatorsLocked(cfg)
	oldResolvers := r.applyResolversLocked(cfg)
	r.current.Store(cfg)
	r.mu.Unlock()
	for _, res := range oldResolvers {
		res.Close()
	}
	for _, p := range removed {
		p.close()
		if r.log != nil {
			r.log.Info("pool removed", zap.String("database", p.Database), zap.String("user", p.User))
		}
	}
}

// Run is the retain task: every retain_connections_time it closes idle
// connections past idle_timeout or server_lifetime (at most
// retain_connections_max per cycle over all pools) and replenishes pools
// below min_pool_size.
func (r *Registry) Run(ctx context.Context) {
	r.warmResolvers(ctx)
	for {
		interval := r.Config().General.RetainConnectionsTime
		if interval <= 0 {
			interval = 30 * time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		r.RetainOnce(ctx)
	}
}

// RetainOnce runs one retain cycle.
func (r *Registry) RetainOnce(ctx context.Context) {
	g := &r.Config().General
	r.collectDynamic(max(g.RetainConnectionsTime, time.Second))
	r.warmResolvers(ctx)
	max := g.RetainConnectionsMax // 0 = no cap
	remaining := max
	for _, p := range r.Pools() {
		switch {
		case max == 0:
			p.conns.Retain(-1)
		case remaining > 0:
			remaining -= p.conns.Retain(remaining)
		}
		if _, _, err := p.conns.Replenish(ctx); err != nil && r.log != nil {
			r.log.Warn("replenish failed", zap.String("database", p.Database), zap.String("user", p.User), zap.Error(err))
		}
	}
}

// Close closes every pool.
func (r *Registry) Close() {
	for _, p := range r.Pools() {
		p.close()
	}
	for _, res := range r.Resolvers() {
		res.Close()
	}
	if g := r.gate.Swap(nil); g != nil {
		g.Close()
	}
}

// applyCoordinatorsLocked gives every database with max_db_connections a
// coordinator shared by its user pools. A changed policy builds a new
// coordinator; permits of the old one stay valid until their connections
// close.
func (r *Registry) applyCoordinatorsLocked(cfg *config.Config) {
	for name, db := range cfg.Pools {
		if db.MaxDBConnections <= 0 {
			delete(r.coords, name)
			continue
		}
		want := coordinator.Config{
			Database: name, MaxDBConnections: db.MaxDBConnections, ReservePoolSize: db.ReservePoolSize,
			ReservePoolTimeout: db.ReservePoolTimeout, MinConnectionLifetime: db.MinConnectionLifetime,
			MinGuaranteedPoolSize: db.MinGuaranteedPoolSize,
		}
		if c, ok := r.coords[name]; !ok || c.Config() != want {
			r.coords[name] = coordinator.New(want, nil)
		}
	}
	for name := range r.coords {
		if _, ok := cfg.Pools[name]; !ok {
			delete(r.coords, name)
		}
	}
	for k, p := range r.pools {
		c := r.coords[k.db]
		old := p.coord.Load()
		if old != nil && (c == nil || old.Coordinator() != c) {
			old.Unregister()
			p.coord.Store(nil)
			old = nil
		}
		if c != nil && old == nil {
			p.coord.Store(c.Register(k.user, p.Settings().User.MinPoolSize, member{p}))
		}
	}
}

// Coordinators lists the coordinators sorted by database (SHOW
// POOL_COORDINATOR, metrics).
func (r *Registry) Coordinators() []*coordinator.Coordinator {
	r.mu.RLock()
	out := make([]*coordinator.Coordinator, 0, len(r.coords))
	for _, c := range r.coords {
		out = append(out, c)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Config().Database < out[j].Config().Database })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
