package authquery

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Entry is a lookup answer: the user's verifier, or Found false when
// PostgreSQL has no such user (or no password for it).
type Entry struct {
	Verifier string
	Found    bool
}

// Fetch runs one lookup for user.
type Fetch func(ctx context.Context, user string) (Entry, error)

// CacheConfig are the cache's bounds and times.
type CacheConfig struct {
	TTL         time.Duration // found entries
	FailureTTL  time.Duration // not-found entries
	MinInterval time.Duration // between re-fetches of one user after a failed authentication
	MaxEntries  int           // entries kept; the oldest go first when full
	// FetchTimeout bounds one lookup, which runs detached from the login
	// that started it (other logins may wait for it).
	FetchTimeout time.Duration
}

// DefaultMaxEntries bounds a cache when the caller gives no bound: about
// 300 bytes each, so some 15 MiB per database at most.
const DefaultMaxEntries = 50000

// Cache holds lookup answers of one database. The zero value is not
// usable; build it with NewCache.
type Cache struct {
	cfg   CacheConfig
	fetch Fetch
	now   func() time.Time
	stats *Stats

	mu      sync.Mutex
	entries map[string]*entry
}

// entry is guarded by Cache.mu.
type entry struct {
	val      Entry
	have     bool          // val holds an answer (false only while the first fetch runs)
	fetched  time.Time     // when val was fetched
	inflight chan struct{} // closed when the running fetch ends; nil when none
	err      error         // the last fetch's error, for waiters
}

// NewCache builds a cache over fetch. now is the clock (time.Now in
// production).
func NewCache(cfg CacheConfig, fetch Fetch, stats *Stats, now func() time.Time) *Cache {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 10 * time.Second
	}
	return &Cache{cfg: cfg, fetch: fetch, now: now, stats: stats, entries: map[string]*entry{}}
}

// Len reports the number of entries (SHOW AUTH_QUERY cache_entries).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Get returns user's entry: the cached one while fresh, else a fetched
// one. Logins asking for the same user while a fetch runs wait for it.
// When the fetch fails, an older answer that found the user is returned
// (stale, counted); without one, the error.
func (c *Cache) Get(ctx context.Context, user string) (Entry, error) {
	c.mu.Lock()
	e := c.entries[user]
	if e != nil && e.have && c.fresh(e) {
		c.mu.Unlock()
		c.stats.CacheHits.Add(1)
		return e.val, nil
	}
	c.stats.CacheMisses.Add(1)
	return c.fetchLocked(ctx, user, e)
}

// Refetch is called after a client failed to authenticate against what Get
// returned: the password may have changed in PostgreSQL. It fetches again
// unless the entry was fetched less than MinInterval ago, and reports
// whether the answer differs from before.
func (c *Cache) Refetch(ctx context.Context, user string) (Entry, bool, error) {
	c.mu.Lock()
	e := c.entries[user]
	if e != nil && e.have && e.inflight == nil && c.now().Sub(e.fetched) < c.cfg.MinInterval {
		c.mu.Unlock()
		c.stats.RateLimited.Add(1)
		return e.val, false, nil
	}
	var before Entry
	if e != nil {
		before = e.val
	}
	c.stats.CacheRefetches.Add(1)
	got, err := c.fetchLocked(ctx, user, e)
	return got, err == nil && got != before, err
}

// fetchLocked runs or joins the fetch of user; c.mu is held on entry and
// released before it returns.
func (c *Cache) fetchLocked(ctx context.Context, user string, e *entry) (Entry, error) {
	if e == nil {
		c.makeRoomLocked()
		e = &entry{}
		c.entries[user] = e
	}
	if wait := e.inflight; wait != nil {
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return Entry{}, fmt.Errorf("wait for auth_query lookup: %w", ctx.Err())
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.answerLocked(e)
	}
	done := make(chan struct{})
	e.inflight = done
	c.mu.Unlock()

	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.FetchTimeout)
	val, err := c.fetch(fctx, user)
	cancel()

	c.mu.Lock()
	defer c.mu.Unlock()
	e.inflight, e.err = nil, err
	close(done)
	if err == nil {
		e.val, e.have, e.fetched = val, true, c.now()
	} else if !e.have && c.entries[user] == e {
		delete(c.entries, user) // nothing to keep: the next login tries again
	}
	return c.answerLocked(e)
}

// answerLocked turns an entry after a fetch into Get's result.
func (c *Cache) answerLocked(e *entry) (Entry, error) {
	if e.err == nil {
		return e.val, nil
	}
	if e.have && e.val.Found {
		c.stats.StaleServed.Add(1)
		return e.val, nil
	}
	return Entry{}, e.err
}

func (c *Cache) fresh(e *entry) bool {
	ttl := c.cfg.TTL
	if !e.val.Found {
		ttl = c.cfg.FailureTTL
	}
	return c.now().Sub(e.fetched) < ttl
}

// makeRoomLocked keeps the cache within MaxEntries. When full it drops a
// sixteenth of the entries at random (Go's map order), so that a flood of
// new names costs amortised O(1) per name, not a scan each. Entries with a
// fetch in flight stay.
func (c *Cache) makeRoomLocked() {
	if len(c.entries) < c.cfg.MaxEntries {
		return
	}
	drop := max(c.cfg.MaxEntries/16, 1)
	for k, e := range c.entries {
		if drop == 0 {
			break
		}
		if e.inflight != nil {
			continue
		}
		delete(c.entries, k)
		c.stats.Evictions.Add(1)
		drop--
	}
}
