package proxy

import (
	"context"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
)

// Trigger is evidence from the proxy's own traffic that the leader may
// have changed before Patroni's next poll says so.
type Trigger string

const (
	// TriggerConnectFailed: a connect to the leader's backend failed
	// (refused, timed out).
	TriggerConnectFailed Trigger = "connect_failed"
	// TriggerServerClosed: a connection to the leader's backend was ended
	// by the server side first (PostgreSQL shutting down for a demotion,
	// a pooler whose server went away), not by the client or by a cut.
	TriggerServerClosed Trigger = "server_closed"
)

// Fast re-polling after a trigger. The extra load on Patroni is bounded by
// the rate, whatever the number of failing connections: at most one extra
// GET /cluster (plus the new leader's GET /patroni until it is confirmed,
// at leaderRecheck) per fastPoll per cluster. It stops once the topology
// has been the same for fastStable consecutive answers with no new trigger
// in between and has a single confirmed leader again; without one (a
// leader restarting in place, which no client traffic reaches while the
// write port refuses) it goes on for at most fastLeaderless after the last
// trigger (Patroni's default ttl: by then a failover has happened or an
// operator must look).
const (
	fastPoll       = 250 * time.Millisecond
	fastStable     = 3
	fastLeaderless = 30 * time.Second
)

// suspect records a trigger for cluster c; it never blocks. The cluster's
// loop picks it up (several triggers before that count as one).
func (c *cluster) suspect(t Trigger) {
	c.env.metrics.Suspicions.WithLabelValues(c.name, string(t)).Inc()
	select {
	case c.suspects <- t:
	default:
	}
}

// fastPolling is the loop's fast re-poll state; owned by the loop goroutine.
type fastPolling struct {
	ticker      patroni.Ticker
	last        time.Time // last extra fetch
	lastSig     string
	stable      int
	started     time.Time
	lastTrigger time.Time
	triggers    int
}

func (f *fastPolling) C() <-chan time.Time {
	if f.ticker == nil {
		return nil
	}
	return f.ticker.C()
}

func (f *fastPolling) stop() {
	if f.ticker != nil {
		f.ticker.Stop()
		f.ticker = nil
	}
}

// onTrigger starts (or keeps) fast polling and fetches at once unless an
// extra fetch happened less than fastPoll ago.
func (c *cluster) onTrigger(ctx context.Context, r *watchRun, f *fastPolling, t Trigger) {
	now := c.env.clock.Now()
	f.stable, f.triggers, f.lastTrigger = 0, f.triggers+1, now
	if f.ticker == nil {
		f.ticker, f.started, f.triggers = c.env.clock.NewTicker(fastPoll), now, 1
		c.env.metrics.FastPolling.WithLabelValues(c.name).Set(1)
		c.env.log.Info("own traffic suggests a leader change: polling patroni fast until the topology is stable",
			zap.String("cluster", c.name), zap.String("trigger", string(t)))
	}
	if now.Sub(f.last) >= fastPoll {
		c.fastFetch(ctx, r, f, now)
	}
}

// onFastTick fetches again while fast polling.
func (c *cluster) onFastTick(ctx context.Context, r *watchRun, f *fastPolling) {
	if now := c.env.clock.Now(); now.Sub(f.last) >= fastPoll/2 {
		c.fastFetch(ctx, r, f, now)
	}
}

// fastFetch asks Patroni now; the answer comes back through the watcher's
// Updates like any poll.
func (c *cluster) fastFetch(ctx context.Context, r *watchRun, f *fastPolling, now time.Time) {
	f.last = now
	c.env.metrics.FastRefreshes.WithLabelValues(c.name).Inc()
	_, _ = r.watcher.Refresh(ctx) // a failure is counted and logged by the watcher's error handler
}

// onUpdate ends fast polling once top has looked the same fastStable times
// with a confirmed leader (or fastLeaderless after the last trigger).
func (c *cluster) onUpdate(f *fastPolling, top *patroni.Topology) {
	if f.ticker == nil {
		return
	}
	sig := signature(top.Cluster)
	if sig == f.lastSig {
		f.stable++
	} else {
		f.lastSig, f.stable = sig, 0
	}
	if f.stable+1 < fastStable {
		return
	}
	c.mu.Lock()
	leaderOK := c.leaderOK
	c.mu.Unlock()
	if !leaderOK && c.env.clock.Now().Sub(f.lastTrigger) < fastLeaderless {
		return
	}
	f.stop()
	c.env.metrics.FastPolling.WithLabelValues(c.name).Set(0)
	c.env.log.Info("topology stable again: back to the normal poll interval", zap.String("cluster", c.name),
		zap.Duration("fast_for", c.env.clock.Now().Sub(f.started)), zap.Int("triggers", f.triggers))
}

// signature is what must stay the same for the topology to count as
// stable: every member's name, role and state.
func signature(cl *patroni.Cluster) string {
	parts := make([]string, 0, len(cl.Members))
	for _, m := range cl.Members {
		parts = append(parts, m.Name+"/"+string(m.Role)+"/"+string(m.State))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
