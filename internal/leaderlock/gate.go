package leaderlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Checker asks one Patroni member whether it holds the leader lock
// (patroni.Client.HoldsLeaderLock).
type Checker interface {
	HoldsLeaderLock(ctx context.Context, api string) (bool, error)
}

// Stats counts a Gate's requests by answer.
type Stats struct {
	Held, NotHeld, Errors atomic.Uint64
}

// Gate caches the answer of one Patroni REST API to "do you hold the
// leader lock?".
type Gate struct {
	api     string
	ttl     time.Duration
	timeout time.Duration
	check   Checker

	stats *Stats

	mu       sync.Mutex
	held     bool
	at       time.Time     // when held was answered; zero = never
	inflight chan struct{} // closed when the request in flight ends; nil when none
}

// New returns a Gate asking api through check. An answer is reused for
// ttl; each request is bounded by timeout and counted in stats, which may
// outlive the Gate (a reload that builds a new one keeps the counts).
func New(api string, ttl, timeout time.Duration, check Checker, stats *Stats) *Gate {
	return &Gate{api: api, ttl: ttl, timeout: timeout, check: check, stats: stats}
}

// API is the URL the gate asks.
func (g *Gate) API() string { return g.api }

// TTL is how long an answer is reused.
func (g *Gate) TTL() time.Duration { return g.ttl }

// Held reports whether the Patroni holds the leader lock, from an answer
// at most ttl old. No answer (an error, a timeout) is false; a caller whose
// ctx ends first gets false and leaves the request to finish for the
// others.
func (g *Gate) Held(ctx context.Context) bool {
	for {
		g.mu.Lock()
		if !g.at.IsZero() && time.Since(g.at) < g.ttl {
			held := g.held
			g.mu.Unlock()
			return held
		}
		wait := g.inflight
		if wait == nil {
			wait = make(chan struct{})
			g.inflight = wait
			go g.ask(wait)
		}
		g.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return false
		}
	}
}

// ask sends one request, stores its answer and closes done. It is not
// tied to a caller's context: the answer serves everyone asking for ttl.
func (g *Gate) ask(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	held, err := g.check.HoldsLeaderLock(ctx, g.api)
	switch {
	case err != nil:
		g.stats.Errors.Add(1)
		held = false
	case held:
		g.stats.Held.Add(1)
	default:
		g.stats.NotHeld.Add(1)
	}
	g.mu.Lock()
	g.held, g.at, g.inflight = held, time.Now(), nil
	g.mu.Unlock()
	close(done)
}

// Close waits for the request in flight, if any, and closes the checker's
// idle connections when it has them (patroni.Client does). Held may still
// be called afterwards; it opens a connection again.
func (g *Gate) Close() {
	g.mu.Lock()
	wait := g.inflight
	g.mu.Unlock()
	if wait != nil {
		<-wait
	}
	if c, ok := g.check.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
