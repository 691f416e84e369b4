package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/proxyconfig"
	"github.com/doorman-go/doorman/internal/relay"
)

// Options are the dependencies of a Proxy. The zero value is usable.
type Options struct {
	Logger   *zap.Logger          // nil: no logs
	Registry *prometheus.Registry // nil: a new one; served on /metrics
	Clock    patroni.Clock        // nil: the system clock (tests inject one)
}

// Proxy is patroni_proxy: clusters, their ports and the HTTP API. Start,
// Reload, Refresh and Shutdown are safe for concurrent use.
type Proxy struct {
	env      *env
	registry *prometheus.Registry

	reloadMu sync.Mutex // serialises Start, Reload and Shutdown
	cfg      *proxyconfig.Config
	ctx      context.Context
	cancel   context.CancelFunc
	api      *http.Server
	apiLn    net.Listener

	mu       sync.Mutex // guards clusters and ports (the maps, not their contents)
	clusters map[string]*cluster
	ports    map[portKey]*port
	served   sync.WaitGroup // accept loops
}

type portKey struct{ cluster, name string }

// New returns a proxy for cfg; nothing is bound until Start.
func New(cfg *proxyconfig.Config, opts Options) *Proxy {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	e := &env{log: opts.Logger, metrics: NewMetrics(opts.Registry), clock: opts.Clock}
	e.settings.Store(&settings{maxAge: cfg.MaxTopologyAge, connectTimeout: cfg.ConnectTimeout})
	p := &Proxy{
		env: e, registry: opts.Registry, cfg: cfg,
		clusters: map[string]*cluster{}, ports: map[portKey]*port{},
	}
	e.suspect = p.suspect
	return p
}

// suspect hands a trigger to the cluster of that name, if it still exists.
func (p *Proxy) suspect(name string, t Trigger) {
	p.mu.Lock()
	c := p.clusters[name]
	p.mu.Unlock()
	if c != nil {
		c.suspect(t)
	}
}

// Start binds the HTTP API and every port and starts polling Patroni. On
// error everything bound so far is released.
func (p *Proxy) Start() error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	if p.ctx != nil {
		return errors.New("start proxy: already started")
	}
	ln, err := net.Listen("tcp", p.cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("start proxy: listen_address: %w", err)
	}
	rl, err := relay.New(relayLoops(runtime.GOMAXPROCS(0)))
	switch {
	case errors.Is(err, relay.ErrUnsupported):
		rl = nil // forward copies with goroutines
	case err != nil:
		_ = ln.Close()
		return fmt.Errorf("start proxy: %w", err)
	}
	p.env.relay = rl
	p.ctx, p.cancel = context.WithCancel(context.Background())
	cfg := p.cfg
	p.cfg = &proxyconfig.Config{} // apply diffs against nothing
	if err := p.apply(cfg); err != nil {
		_ = ln.Close()
		p.cancel()
		p.closeRelay()
		return fmt.Errorf("start proxy: %w", err)
	}
	p.apiLn = ln
	p.api = &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.api.Serve(ln) }()
	p.env.metrics.ReloadSuccessful.Set(1)
	p.env.metrics.ReloadSuccessTime.SetToCurrentTime()
	return nil
}

// Reload swaps in cfg: ports added, removed or changed, Patroni hosts and
// TLS changed, timeouts. Ports whose cluster, name and listen address stay
// keep their listener and their connections (a changed role, host_port or
// max_lag_in_bytes re-applies the current topology, which cuts only the
// connections that no longer qualify). If a new client or listener cannot be
// built the old configuration stays in force and an error is returned.
// listen_address cannot change without a restart.
func (p *Proxy) Reload(cfg *proxyconfig.Config) error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	if p.ctx == nil {
		return errors.New("reload proxy: not started")
	}
	if p.ctx.Err() != nil {
		return errors.New("reload proxy: shutting down")
	}
	err := p.apply(cfg)
	if err != nil {
		p.ReloadFailed()
		return fmt.Errorf("reload proxy: %w", err)
	}
	p.env.metrics.ReloadSuccessful.Set(1)
	p.env.metrics.ReloadSuccessTime.SetToCurrentTime()
	return nil
}

// ReloadFailed records a reload that kept the running configuration
// because its file did not load (Reload records its own failures).
func (p *Proxy) ReloadFailed() {
	p.env.metrics.ReloadSuccessful.Set(0)
	p.env.metrics.ReloadFailures.Inc()
}

// Refresh fetches every cluster's /cluster now and applies the answers
// (GET /update_clusters). Errors of all clusters are joined.
func (p *Proxy) Refresh(ctx context.Context) error {
	p.mu.Lock()
	cs := make([]*cluster, 0, len(p.clusters))
	for _, c := range p.clusters {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.refresh(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Shutdown stops the HTTP API, every listener and every watcher, then waits
// for the forwarded connections to end; when ctx ends first it cuts them and
// returns ctx's error after they are gone.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	if p.ctx == nil {
		return nil
	}
	p.cancel()
	if p.api != nil {
		_ = p.api.Shutdown(ctx)
	}
	p.mu.Lock()
	ports := make([]*port, 0, len(p.ports))
	for _, pt := range p.ports {
		pt.close(false, ReasonShutdown)
		ports = append(ports, pt)
	}
	clusters := make([]*cluster, 0, len(p.clusters))
	for _, c := range p.clusters {
		clusters = append(clusters, c)
	}
	p.mu.Unlock()
	p.served.Wait()
	for _, c := range clusters {
		stopRun(c.run)
	}
	done := make(chan struct{})
	go func() {
		for _, pt := range ports {
			pt.conns.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
		p.closeRelay()
		return nil
	case <-ctx.Done():
	}
	p.env.log.Warn("shutdown timeout: closing the remaining connections")
	for _, pt := range ports {
		pt.state.cutAll(ReasonShutdown)
	}
	<-done
	p.closeRelay()
	return ctx.Err()
}

// relayLoops is how many event loops forward the connections on procs
// CPUs: one per four, at least one. One loop serves every connection with
// one goroutine, so a busy proxy wakes one thread where more loops wake one
// each: on 2 CPUs, pgbench -S at 10 clients cost 28-33 µs of CPU per
// transaction with one loop and 32-37 with two (docs/benchmarks-passes.md, eighth
// pass).
// A loop moves tens of thousands of small transactions a second on one
// core, so more loops only pay where there are many cores to spread over.
func relayLoops(procs int) int { return max(1, procs/4) }

// closeRelay stops the event loops once no connection uses them.
func (p *Proxy) closeRelay() {
	if p.env.relay != nil {
		p.env.relay.Close()
	}
}

// PortAddr returns the bound address of a port, or nil.
func (p *Proxy) PortAddr(clusterName, portName string) net.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pt := p.ports[portKey{clusterName, portName}]; pt != nil {
		return pt.Addr()
	}
	return nil
}

// APIAddr returns the bound address of the HTTP API, or nil before Start.
func (p *Proxy) APIAddr() net.Addr {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	if p.apiLn == nil {
		return nil
	}
	return p.apiLn.Addr()
}

// Backends returns a snapshot of a port's backends, sorted by address.
func (p *Proxy) Backends(clusterName, portName string) []BackendStat {
	p.mu.Lock()
	pt := p.ports[portKey{clusterName, portName}]
	p.mu.Unlock()
	if pt == nil {
		return nil
	}
	return pt.state.stats()
}

// Registry is the registry /metrics serves.
func (p *Proxy) Registry() *prometheus.Registry { return p.registry }
