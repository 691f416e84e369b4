package proxy

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/proxyconfig"
)

// change is the difference between the running config and a new one.
type change struct {
	newRuns   map[string]*watchRun // cluster -> new watcher (new cluster or changed source)
	removed   []portKey            // ports to close (gone or moved)
	kept      map[portKey]PortSpec // ports that stay, with their new spec
	added     map[portKey]PortSpec // ports to bind
	bound     map[portKey]*port    // added ports bound before the commit
	deferred  []portKey            // added ports whose address a removed port still holds
	dropClust []string
}

// apply moves from p.cfg to cfg. Everything that can fail (Patroni clients,
// TLS files, binding new addresses) happens before anything running is
// touched; only a port taking over an address that a removed port releases
// is bound after the commit, and its failure is reported but not undone.
func (p *Proxy) apply(cfg *proxyconfig.Config) error {
	ch, err := p.prepare(cfg)
	if err != nil {
		return err
	}
	if cfg.ListenAddress != p.cfg.ListenAddress && p.cfg.ListenAddress != "" {
		p.env.log.Warn("listen_address changed: it takes effect after a restart",
			zap.String("old", p.cfg.ListenAddress), zap.String("new", cfg.ListenAddress))
	}
	p.env.settings.Store(&settings{maxAge: cfg.MaxTopologyAge, connectTimeout: cfg.ConnectTimeout})
	p.cfg = cfg
	return p.commit(ch)
}

func (p *Proxy) prepare(cfg *proxyconfig.Config) (*change, error) {
	ch := &change{newRuns: map[string]*watchRun{}, kept: map[portKey]PortSpec{}, added: map[portKey]PortSpec{}, bound: map[portKey]*port{}}
	var errs []error
	for name, c := range cfg.Clusters {
		src := sourceOf(cfg, c)
		if old, ok := p.clusters[name]; ok && old.run != nil && old.run.src.equal(src) {
			continue
		}
		r, err := newRun(p.env, name, src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ch.newRuns[name] = r
	}
	for name := range p.clusters {
		if _, ok := cfg.Clusters[name]; !ok {
			ch.dropClust = append(ch.dropClust, name)
		}
	}
	releasing := map[string]bool{}
	for k, pt := range p.ports {
		np, ok := cfg.Clusters[k.cluster].Ports[k.name]
		if ok && np.Listen == pt.getSpec().Listen {
			ch.kept[k] = SpecFromConfig(k.cluster, k.name, np)
			continue
		}
		ch.removed = append(ch.removed, k)
		releasing[pt.getSpec().Listen] = true
	}
	for cname, c := range cfg.Clusters {
		for pname, pc := range c.Ports {
			k := portKey{cname, pname}
			if _, ok := ch.kept[k]; ok {
				continue
			}
			spec := SpecFromConfig(cname, pname, pc)
			ch.added[k] = spec
			if releasing[pc.Listen] {
				ch.deferred = append(ch.deferred, k)
				continue
			}
			pt, err := listenPort(p.env, spec)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ch.bound[k] = pt
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, pt := range ch.bound {
			_ = pt.ln.Close()
		}
		for _, r := range ch.newRuns {
			r.client.CloseIdleConnections()
		}
		return nil, err
	}
	return ch, nil
}

func (p *Proxy) commit(ch *change) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range ch.removed {
		pt := p.ports[k]
		pt.close(true, ReasonPortRemoved)
		delete(p.ports, k)
		if c := p.clusters[k.cluster]; c != nil {
			c.detach(k.name)
		}
		p.env.metrics.PortOpen.DeleteLabelValues(k.cluster, k.name)
		p.env.log.Info("port removed", zap.String("cluster", k.cluster), zap.String("port", k.name))
	}
	for _, name := range ch.dropClust {
		stopRun(p.clusters[name].run)
		delete(p.clusters, name)
		p.env.log.Info("cluster removed", zap.String("cluster", name))
	}
	for name, r := range ch.newRuns {
		c := p.clusters[name]
		if c == nil {
			c = newCluster(p.env, name)
			p.clusters[name] = c
		} else {
			stopRun(c.run)
			p.env.log.Info("patroni hosts or settings changed: watcher restarted", zap.String("cluster", name))
		}
		c.start(p.ctx, r)
	}
	var errs []error
	for _, k := range ch.deferred {
		pt, err := listenPort(p.env, ch.added[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ch.bound[k] = pt
	}
	for k, spec := range ch.kept {
		pt := p.ports[k]
		if !specEqual(pt.getSpec(), spec) {
			pt.setSpec(spec)
			p.clusters[k.cluster].attach(k.name, pt) // re-apply the current topology
		}
	}
	for _, k := range sortedKeys(ch.bound) {
		pt := ch.bound[k]
		p.ports[k] = pt
		p.clusters[k.cluster].attach(k.name, pt)
		p.served.Go(pt.serve)
		p.env.log.Info("port listening", zap.String("cluster", k.cluster), zap.String("port", k.name),
			zap.Stringer("addr", pt.Addr()), zap.Any("roles", pt.getSpec().Roles))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bind ports after releasing their addresses: %w", err)
	}
	return nil
}

func specEqual(a, b PortSpec) bool {
	return a.Cluster == b.Cluster && a.Name == b.Name && a.Listen == b.Listen && a.HostPort == b.HostPort &&
		a.MaxLag == b.MaxLag && fmt.Sprint(a.Roles) == fmt.Sprint(b.Roles)
}

func sortedKeys(m map[portKey]*port) []portKey {
	keys := make([]portKey, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b portKey) int {
		return cmp.Or(strings.Compare(a.cluster, b.cluster), strings.Compare(a.name, b.name))
	})
	return keys
}
