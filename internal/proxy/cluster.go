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
	// suspects carries triggers from connection goroutines to the loop;
	// buffered (1) so that suspect never blocks. Made by newCluster.
	suspects chan Trigger

	mu         sync.Mutex // guards everything below
	run        *watchRun
	ports      map[string]*port
	current    *patroni.Topology
	appliedSeq uint64
	stale      bool
	leaderOK   bool // the single leader of current is confirmed promoted
	// live is the leader of current confirmed on its postgres's word while
	// /cluster shows it restarting in place (liveleader.go); "" otherwise.
	live string
	// liveKey is "name/state" of that confirmation: remembered while
	// /cluster shows the leader so.
	liveKey string
	// last is the leader last confirmed promoted while running and the
	// newest timeline seen.
	last lastLeader

	// promoted is the leader whose own /patroni confirmed it runs out of
	// recovery; "" until then and whenever there is no single leader.
	promoted string
	// doubted is the leader last found unconfirmed, and since when.
	doubted      string
	doubtedSince time.Time
	// memberSeries: the members gauge's counts by role and state as the
	// last apply set them (setMembers).
	memberSeries map[memberKey]int
}

func newCluster(e *env, name string) *cluster {
	return &cluster{name: name, env: e, suspects: make(chan Trigger, 1)}
}

// leaderRecheck is how often an unconfirmed leader's own API is asked again.
const leaderRecheck = 100 * time.Millisecond

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
	var recheck patroni.Ticker
	var recheckC <-chan time.Time
	stopRecheck := func() {
		if recheck != nil {
			recheck.Stop()
			recheck, recheckC = nil, nil
		}
	}
	defer stopRecheck()
	var fast fastPolling
	defer fast.stop()
	setRecheck := func(pending bool) {
		switch {
		case pending && recheck == nil:
			recheck = c.env.clock.NewTicker(leaderRecheck)
			recheckC = recheck.C()
		case !pending:
			stopRecheck()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case top := <-r.watcher.Updates():
			setRecheck(c.applyConfirmed(ctx, r, top))
			c.onUpdate(&fast, top)
		case trig := <-c.suspects:
			c.onTrigger(ctx, r, &fast, trig)
		case <-fast.C():
			c.onFastTick(ctx, r, &fast)
		case <-recheckC:
			top := c.latest(r)
			if top == nil {
				stopRecheck()
				continue
			}
			v := c.confirm(ctx, r, top)
			if v.ok {
				c.apply(r, top, v)
			}
			setRecheck(v.pending)
		case <-t.C():
			c.checkStale()
		}
	}
}

// latest is the topology applied last from run r, or nil.
func (c *cluster) latest(r *watchRun) *patroni.Topology {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r != c.run {
		return nil
	}
	return c.current
}

// applyConfirmed confirms top's leader and applies top; it reports whether
// the leader is still unconfirmed and worth asking again.
func (c *cluster) applyConfirmed(ctx context.Context, r *watchRun, top *patroni.Topology) (pending bool) {
	v := c.confirm(ctx, r, top)
	c.apply(r, top, v)
	return v.pending
}

// leaderVerdict is what confirm found out about a topology's single leader.
type leaderVerdict struct {
	ok bool // the write port may open
	// live names the leader when ok rests on its postgres's own word while
	// /cluster does not show it running yet (liveleader.go).
	live    string
	pending bool // a leader exists, unconfirmed, worth asking again
}

// confirm decides whether the single leader of top is known to run out of
// recovery. /cluster names a member leader once it holds the leader key; in
// a switchover that comes a few hundred milliseconds before its postgres is
// promoted, and a write routed there fails with "cannot execute INSERT in a
// read-only transaction". So a leader is trusted only after its own GET
// /patroni says role master/primary (Patroni derives that role from
// pg_is_in_recovery() on each request); the answer is remembered until the
// leader changes or leaves running. A member without api_url cannot be
// asked and is trusted. A leader restarting in place is judged by
// confirmLive.
func (c *cluster) confirm(ctx context.Context, r *watchRun, top *patroni.Topology) leaderVerdict {
	leaders := top.Cluster.Leaders()
	c.mu.Lock()
	c.last.timeline = max(c.last.timeline, maxTimeline(top.Cluster))
	if len(leaders) != 1 || !leaders[0].Serving() {
		c.promoted = ""
		last := c.last
		c.mu.Unlock()
		if len(leaders) == 1 && mayAskLive(leaders[0], last) {
			return c.confirmLive(ctx, r, leaders[0], last)
		}
		c.setLiveKey("")
		return leaderVerdict{}
	}
	l := leaders[0]
	c.liveKey = ""
	known := c.promoted == l.Name
	c.mu.Unlock()
	if known || l.APIURL == "" {
		return leaderVerdict{ok: true}
	}
	st, err := r.client.FetchMemberStatus(ctx, l.APIURL)
	result := "promoted"
	switch {
	case err != nil:
		result = "error"
	case !st.Primary():
		result = "in_recovery"
	}
	c.env.metrics.LeaderChecks.WithLabelValues(c.name, result).Inc()
	now := c.env.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if result == "promoted" {
		c.promoted = l.Name
		c.last = lastLeader{name: l.Name, timeline: max(c.last.timeline, st.Timeline, l.Timeline)}
		fields := []zap.Field{zap.String("cluster", c.name), zap.String("leader", l.Name)}
		if c.doubted == l.Name {
			fields = append(fields, zap.Duration("waited", now.Sub(c.doubtedSince)))
		}
		c.doubted = ""
		c.env.log.Info("leader confirmed out of recovery by its own Patroni API; write ports open", fields...)
		return leaderVerdict{ok: true}
	}
	c.doubt(l.Name, now, st, err)
	return leaderVerdict{pending: ctx.Err() == nil}
}

// doubt logs, once per leader, that it is not (yet) confirmed. c.mu held.
func (c *cluster) doubt(leader string, now time.Time, st patroni.MemberStatus, err error) {
	if c.doubted == leader {
		return
	}
	c.doubted, c.doubtedSince = leader, now
	c.env.log.Warn("patroni names a leader that its own API does not (yet) confirm as promoted; "+
		"write ports refuse new connections until it does",
		zap.String("cluster", c.name), zap.String("leader", leader), zap.String("role", st.Role),
		zap.String("state", string(st.State)), zap.Error(err))
}

func (c *cluster) setLiveKey(k string) {
	c.mu.Lock()
	c.liveKey = k
	c.mu.Unlock()
}

// confirmLive judges leader l, the member last confirmed promoted, which
// /cluster shows restarting in place: ok once its own GET /primary (200:
// it holds the leader lock in its own view) relays that its postgres
// answered a query out of recovery (liveLeader). The answer is
// remembered while /cluster shows l in the same state; until then the
// leader is pending and asked again at leaderRecheck.
func (c *cluster) confirmLive(ctx context.Context, r *watchRun, l patroni.Member, last lastLeader) leaderVerdict {
	key := l.Name + "/" + string(l.State)
	c.mu.Lock()
	known := c.liveKey == key
	c.mu.Unlock()
	if known {
		return leaderVerdict{ok: true, live: l.Name}
	}
	st, err := r.client.FetchLeaderStatus(ctx, l.APIURL)
	result := "live_primary"
	switch {
	case err != nil:
		result = "error"
	case !liveLeader(l, last, st):
		result = "not_live"
	}
	c.env.metrics.LeaderChecks.WithLabelValues(c.name, result).Inc()
	now := c.env.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if result != "live_primary" {
		c.liveKey = ""
		c.doubt(l.Name, now, st, err)
		return leaderVerdict{pending: ctx.Err() == nil}
	}
	c.liveKey = key
	c.last.timeline = max(c.last.timeline, st.Timeline)
	fields := []zap.Field{zap.String("cluster", c.name), zap.String("leader", l.Name),
		zap.String("cluster_state", string(l.State)), zap.String("patroni_state", string(st.State)), zap.Int("timeline", st.Timeline)}
	if c.doubted == l.Name {
		fields = append(fields, zap.Duration("waited", now.Sub(c.doubtedSince)))
	}
	c.doubted = ""
	c.env.log.Info("leader restarting in place: its postgres answers out of recovery (own Patroni API) "+
		"before /cluster says running; write ports open", fields...)
	return leaderVerdict{ok: true, live: l.Name}
}

// apply installs top (from run r) on every port, unless r is no longer the
// cluster's watcher or a newer topology of r has been applied already.
// v says whether top's single leader is confirmed promoted.
func (c *cluster) apply(r *watchRun, top *patroni.Topology, v leaderVerdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r != c.run || top.Seq < c.appliedSeq {
		return
	}
	c.current, c.appliedSeq, c.leaderOK, c.live = top, top.Seq, v.ok, v.live
	routed := effectiveCluster(top.Cluster, v.live)
	for _, p := range c.ports {
		p.applyPlan(NewPlan(routed, p.getSpec(), v.ok), top.FetchedAt)
	}
	m := c.env.metrics
	m.Updates.WithLabelValues(c.name).Inc()
	c.memberSeries = setMembers(m.Members, c.name, c.memberSeries, top.Cluster.Members)
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
		p.applyPlan(NewPlan(effectiveCluster(c.current.Cluster, c.live), p.getSpec(), c.leaderOK), c.current.FetchedAt)
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
	c.applyConfirmed(ctx, r, top)
	return nil
}
