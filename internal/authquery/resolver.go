package authquery

import (
	"context"
	"sync/atomic"
	"time"
)

// Config is one database's auth_query as the resolver needs it.
type Config struct {
	Database string // the pool (SHOW AUTH_QUERY's database column)
	Query    string
	Workers  int
	Cache    CacheConfig
}

// Resolver answers "what is this user's verifier" for one database.
type Resolver struct {
	Database string
	Stats    Stats
	cache    *Cache
	exec     *Executor
	warmed   atomic.Bool
}

// New builds a resolver whose executor opens connections with dial.
func New(cfg Config, dial Dial, now func() time.Time) *Resolver {
	r := &Resolver{Database: cfg.Database}
	r.exec = NewExecutor(cfg.Query, cfg.Workers, dial, &r.Stats)
	r.cache = NewCache(cfg.Cache, r.exec.Lookup, &r.Stats, now)
	return r
}

// Get returns user's verifier (see Cache.Get).
func (r *Resolver) Get(ctx context.Context, user string) (Entry, error) {
	return r.cache.Get(ctx, user)
}

// Refetch asks again after a failed authentication (see Cache.Refetch).
func (r *Resolver) Refetch(ctx context.Context, user string) (Entry, bool, error) {
	return r.cache.Refetch(ctx, user)
}

// Authenticated counts a login's outcome.
func (r *Resolver) Authenticated(ok bool) {
	if ok {
		r.Stats.AuthSuccess.Add(1)
	} else {
		r.Stats.AuthFailure.Add(1)
	}
}

// Entries is the number of cached answers.
func (r *Resolver) Entries() int { return r.cache.Len() }

// Warm opens the executor connections (see Executor.Warm).
func (r *Resolver) Warm(ctx context.Context) error { return r.exec.Warm(ctx) }

// Close closes the executor connections.
func (r *Resolver) Close() { r.exec.Close() }

// MarkWarmed reports true the first time it is called: the caller then
// warms the executor.
func (r *Resolver) MarkWarmed() bool { return r.warmed.CompareAndSwap(false, true) }
