package authquery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeDB answers lookups from a map and counts them; block, when set,
// holds every fetch until closed.
type fakeDB struct {
	mu      sync.Mutex
	users   map[string]string
	err     error
	queries atomic.Int64
	block   chan struct{}
}

func (f *fakeDB) fetch(ctx context.Context, user string) (Entry, error) {
	f.queries.Add(1)
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return Entry{}, f.err
	}
	v, ok := f.users[user]
	return Entry{Verifier: v, Found: ok}, nil
}

func (f *fakeDB) set(user, v string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v == "" {
		delete(f.users, user)
	} else {
		f.users[user] = v
	}
	f.err = err
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Unix(1_700_000_000, 0)} }
func testConfig(max int) CacheConfig {
	return CacheConfig{TTL: time.Hour, FailureTTL: 30 * time.Second, MinInterval: time.Second, MaxEntries: max}
}
func newTestCache(f *fakeDB, c *clock, max int) (*Cache, *Stats) {
	st := &Stats{}
	return NewCache(testConfig(max), f.fetch, st, c.now), st
}

func TestCacheSteps(t *testing.T) {
	type step struct {
		advance  time.Duration
		db       string // "" leaves the fake as it is, "-" drops the user, "!" makes lookups fail
		refetch  bool
		want     Entry
		wantErr  bool
		queries  int64 // total lookups after the step
		changed  bool
		stats    func(*Stats) uint64
		statWant uint64
	}
	const u = "alice"
	v1, v2 := "md5aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "md5bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	found := func(v string) Entry { return Entry{Verifier: v, Found: true} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"hit within ttl", []step{
			{db: v1, want: found(v1), queries: 1},
			{advance: 59 * time.Minute, want: found(v1), queries: 1, stats: func(s *Stats) uint64 { return s.CacheHits.Load() }, statWant: 1},
		}},
		{"refetched after ttl", []step{
			{db: v1, want: found(v1), queries: 1},
			{advance: time.Hour, db: v2, want: found(v2), queries: 2},
		}},
		{"negative entry for failure ttl", []step{
			{want: Entry{}, queries: 1},
			{advance: 29 * time.Second, db: v1, want: Entry{}, queries: 1},
			{advance: time.Second, want: found(v1), queries: 2},
		}},
		{"refetch after failed auth picks up a new password", []step{
			{db: v1, want: found(v1), queries: 1},
			{advance: 2 * time.Second, db: v2, refetch: true, want: found(v2), changed: true, queries: 2},
			{want: found(v2), queries: 2},
		}},
		{"refetch within min_interval is rate limited", []step{
			{db: v1, want: found(v1), queries: 1},
			{advance: 500 * time.Millisecond, db: v2, refetch: true, want: found(v1), queries: 1,
				stats: func(s *Stats) uint64 { return s.RateLimited.Load() }, statWant: 1},
		}},
		{"refetch sees a dropped user", []step{
			{db: v1, want: found(v1), queries: 1},
			{advance: 2 * time.Second, db: "-", refetch: true, want: Entry{}, changed: true, queries: 2},
		}},
		{"lookup failure without an entry is an error, not cached", []step{
			{db: "!", wantErr: true, queries: 1},
			{wantErr: true, queries: 2},
		}},
		{"lookup failure serves the expired entry", []step{
			{db: v1, want: found(v1), queries: 1},
			{advance: 2 * time.Hour, db: "!", want: found(v1), queries: 2,
				stats: func(s *Stats) uint64 { return s.StaleServed.Load() }, statWant: 1},
		}},
		{"lookup failure does not serve a negative entry", []step{
			{want: Entry{}, queries: 1},
			{advance: time.Minute, db: "!", wantErr: true, queries: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDB{users: map[string]string{}}
			clk := newClock()
			c, st := newTestCache(f, clk, 0)
			for i, s := range tt.steps {
				clk.add(s.advance)
				switch s.db {
				case "":
				case "-":
					f.set(u, "", nil)
				case "!":
					f.set(u, "", errors.New("connection refused"))
				default:
					f.set(u, s.db, nil)
				}
				var got Entry
				var err error
				var changed bool
				if s.refetch {
					got, changed, err = c.Refetch(context.Background(), u)
				} else {
					got, err = c.Get(context.Background(), u)
				}
				if s.wantErr {
					require.Error(t, err, "step %d", i)
				} else {
					require.NoError(t, err, "step %d", i)
					require.Equal(t, s.want, got, "step %d", i)
				}
				require.Equal(t, s.changed, changed, "step %d", i)
				require.Equal(t, s.queries, f.queries.Load(), "step %d: lookups", i)
				if s.stats != nil {
					require.Equal(t, s.statWant, s.stats(st), "step %d", i)
				}
			}
		})
	}
}

func TestCacheSingleFlight(t *testing.T) {
	f := &fakeDB{users: map[string]string{"bob": "md5cccccccccccccccccccccccccccccccc"}, block: make(chan struct{})}
	c, st := newTestCache(f, newClock(), 0)
	const n = 100
	var wg sync.WaitGroup
	results := make(chan Entry, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := c.Get(context.Background(), "bob")
			if err == nil {
				results <- e
			}
		}()
	}
	require.Eventually(t, func() bool { return st.CacheMisses.Load() == n }, 5*time.Second, time.Millisecond)
	close(f.block)
	wg.Wait()
	close(results)
	require.Len(t, results, n)
	for e := range results {
		require.True(t, e.Found)
	}
	require.EqualValues(t, 1, f.queries.Load(), "100 first logins of one user run one lookup")
}

func TestCacheWaiterGivesUpWithItsContext(t *testing.T) {
	f := &fakeDB{users: map[string]string{}, block: make(chan struct{})}
	c, _ := newTestCache(f, newClock(), 0)
	go func() { _, _ = c.Get(context.Background(), "x") }()
	require.Eventually(t, func() bool { return f.queries.Load() == 1 }, 5*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Get(ctx, "x")
	require.ErrorIs(t, err, context.Canceled)
	close(f.block)
}

func TestCacheBounded(t *testing.T) {
	f := &fakeDB{users: map[string]string{}}
	c, st := newTestCache(f, newClock(), 160)
	for i := range 10000 {
		_, err := c.Get(context.Background(), fmt.Sprintf("nobody-%d", i))
		require.NoError(t, err)
		require.LessOrEqual(t, c.Len(), 160)
	}
	require.Greater(t, st.Evictions.Load(), uint64(9000))
}
