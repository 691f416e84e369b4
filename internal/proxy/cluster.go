package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

// source is what a cluster's watcher is built from; a change restarts it.
type source struct {
	hosts          []string
	tls            *proxyconfig.TLS
	interval       time.Duration
	patroniTimeout time.Duration
}

func sourceOf(cfg *proxyconfig.Config, c proxyconfig.Cluster) source {
	return source{hosts: c.Hosts, tls: c.TLS, interval: cfg.ClusterUpdateInterval, patroniTimeout: cfg.PatroniTimeout}
}

func (s source) equal(o source) bool {
	return slices.Equal(s.hosts, o.hosts) && s.interval == o.interval && s.patroniTimeout == o.patroniTimeout &&
		(s.tls == nil) == (o.tls == nil) && (s.tls == nil || *s.tls == *o.tls)
}

// watchRun is one generation of a cluster's Patroni watcher.
type watchRun struct {
	src     source
	client  *patroni.Client
	watcher *patroni.Watcher
	cancel  context.CancelFunc
	done    chan struct{}
}

// cluster is one Patroni cluster: its watcher, last topology and ports.
type cluster struct {
	name string
	env  *env

	mu         sync.Mutex // guards everything below
	run        *watchRun
	ports      map[string]*port
	current    *patroni.Topology
	appliedSeq uint64
	stale      bool
}

func newRun(e *env, name string, src source) (*watchRun, error) {
	opts := patroni.ClientOptions{
		Timeout: src.patroniTimeout,
		Observer: patroni.ObserverFunc(func(url string, _ time.Duration, err error) {
			if err != nil && !errors.Is(err, context.Canceled) {
				e.metrics.PatroniErrors.WithLabelValues(name, url).Inc()
			}
		}),
	}
	if t := src.tls; t != nil {
		opts.TLS = &patroni.TLSConfig{CACert: t.CACert, ClientCert: t.ClientCert, ClientKey: t.ClientKey, SkipVerify: t.SkipVerify}
	}
	client, err := patroni.NewClient(src.hosts, opts)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	onErr := func(err error) {
		e.metrics.UpdateErrors.WithLabelValues(name).Inc()
		e.log.Warn("patroni /cluster fetch failed on every URL; keeping the last topology",
			zap.String("cluster", name), zap.Error(err))
	}
	w := patroni.NewWatcher(client, src.interval, patroni.WithClock(e.clock), patroni.WithErrorHandler(onErr))
	return &watchRun{src: src, client: client, watcher: w, done: make(chan struct{})}, nil
}

// start runs the watcher and the loop applying its updates.
func (c *cluster) start(ctx context.Context, r *watchRun) {
	ctx, r.cancel = context.WithCancel(ctx)
	c.mu.Lock()
	c.run, c.appliedSeq = r, 0
	c.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.watcher.Run(ctx) })
	wg.Go(func() { c.loop(ctx, r) })
	go func() { wg.Wait(); r.client.CloseIdleConnections(); close(r.done) }()
}

// stopRun ends r and waits for its goroutines.
func stopRun(r *watchRun) {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

func (c *cluster) loop(ctx context.Context, r *watchRun) {
	t := c.env.clock.NewTicker(r.src.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case top := <-r.watcher.Updates():
			c.apply(r, top)
		case <-t.C():
			c.checkStale()
		}
	}
}

// apply installs top (from run r) on every port, unless r is no longer the
// cluster's watcher or a newer topology of r has been applied already.
func (c *cluster) apply(r *watchRun, top *patroni.Topology) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r != c.run || top.Seq < c.appliedSeq {
		return
	}
	c.current, c.appliedSeq = top, top.Seq
	for _, p := range c.ports {
		p.applyPlan(NewPlan(top.Cluster, p.getSpec()), top.FetchedAt)
	}
	m := c.env.metrics
	m.Updates.WithLabelValues(c.name).Inc()
	m.Members.DeletePartialMatch(map[string]string{"cluster": c.name})
	for _, mem := range top.Cluster.Members {
		m.Members.WithLabelValues(c.name, string(mem.Role), string(mem.State)).Inc()
	}
	m.Leaders.WithLabelValues(c.name).Set(float64(len(top.Cluster.Leaders())))
	m.TopologyAge.WithLabelValues(c.name).Set(0)
	m.TopologyStale.WithLabelValues(c.name).Set(0)
	if c.stale {
		c.stale = false
		c.env.log.Info("patroni topology is fresh again", zap.String("cluster", c.name), zap.String("source", top.Source))
	}
}

// attach adds or updates port p and applies the current topology to it.
func (c *cluster) attach(name string, p *port) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ports == nil {
		c.ports = map[string]*port{}
	}
	c.ports[name] = p
	if c.current != nil {
		p.applyPlan(NewPlan(c.current.Cluster, p.getSpec()), c.current.FetchedAt)
	}
}

func (c *cluster) detach(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ports, name)
}

// checkStale updates the age metrics and, while the topology is older than
// max_topology_age, logs an error on every tick: new connections are being
// refused and an operator must look.
func (c *cluster) checkStale() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, maxAge := c.env.clock.Now(), c.env.maxAge()
	m := c.env.metrics
	if c.current == nil {
		m.TopologyStale.WithLabelValues(c.name).Set(1)
		c.env.log.Error("no patroni topology yet: every port of the cluster refuses new connections", zap.String("cluster", c.name))
		return
	}
	age := c.current.Age(now)
	m.TopologyAge.WithLabelValues(c.name).Set(age.Seconds())
	if age <= maxAge {
		return
	}
	c.stale = true
	m.TopologyStale.WithLabelValues(c.name).Set(1)
	c.env.log.Error("patroni topology is stale: every Patroni URL has failed for longer than max_topology_age; "+
		"new connections are refused, existing ones are kept",
		zap.String("cluster", c.name), zap.Duration("age", age), zap.Duration("max_topology_age", maxAge))
}

// fresh reports whether the cluster has a topology within maxAge.
func (c *cluster) fresh() (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil {
		return false, -1
	}
	age := c.current.Age(c.env.clock.Now())
	return age <= c.env.maxAge(), age
}

// refresh fetches now through the current watcher and applies the answer.
func (c *cluster) refresh(ctx context.Context) error {
	c.mu.Lock()
	r := c.run
	c.mu.Unlock()
	if r == nil {
		return fmt.Errorf("cluster %s: not running", c.name)
	}
	top, err := r.watcher.Refresh(ctx)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", c.name, err)
	}
	c.apply(r, top)
	return nil
}
