package prepared

import (
	"container/list"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/doorman-go/doorman/internal/protocol"
)

// Statement is one distinct statement known to a pool.
type Statement struct {
	Name      string // server-side name, unique per pool cache
	Query     string
	ParamOIDs []uint32
	Context   string // session context part of the identity
	parse     []byte // encoded Parse frame with Name
	key       uint64
	size      int64       // bytes the statement keeps alive, for the byte bounds
	verified  atomic.Bool // some server accepted the Parse
}

// Byte bounds, applied with the same LRU as the count bounds. A statement
// larger than a bound is still kept alone: the one just added is never
// evicted.
const (
	// CacheBytes bounds a pool cache (query texts, encoded Parse
	// messages, parameter types) per pool.
	CacheBytes int64 = 64 << 20
	// ClientBytes bounds the statements one client's name map keeps
	// alive (a statement evicted from the pool cache stays alive while a
	// client names it).
	ClientBytes int64 = 16 << 20
	// ServerBytes bounds the text of the statements prepared on one
	// server connection (PostgreSQL holds each one in the backend's
	// memory).
	ServerBytes int64 = 16 << 20
)

// statementOverhead approximates a Statement's fixed cost: the struct, its
// list element and index entry, the name.
const statementOverhead = 160

// Size is the number of bytes the statement keeps alive.
func (s *Statement) Size() int64 { return s.size }

func statementSize(query string, oids []uint32, ctx string) int64 {
	// The query is held twice: as text and inside the encoded Parse.
	return statementOverhead + 2*int64(len(query)) + 8*int64(len(oids)) + int64(len(ctx))
}

// Verified reports whether some server has accepted this statement, so a
// client's Parse of it can be answered without a server.
func (s *Statement) Verified() bool { return s.verified.Load() }

// MarkVerified records that a server answered the Parse with ParseComplete.
func (s *Statement) MarkVerified() { s.verified.Store(true) }

// Parse returns the encoded Parse message that prepares the statement under
// its server-side name. The slice must not be modified.
func (s *Statement) Parse() []byte { return s.parse }

func (s *Statement) same(query string, oids []uint32, ctx string) bool {
	if s.Query != query || s.Context != ctx || len(s.ParamOIDs) != len(oids) {
		return false
	}
	for i := range oids {
		if s.ParamOIDs[i] != oids[i] {
			return false
		}
	}
	return true
}

// Counters of a pool cache.
type Counters struct {
	Hits, Misses, Evictions uint64
	Rejected                uint64 // entries dropped because a server rejected the Parse
	Size                    int
	Bytes                   int64
}

// Cache is a pool's statement cache.
type Cache struct {
	prefix string
	seed   maphash.Seed
	seq    atomic.Uint64

	mu        sync.Mutex
	max       int
	maxBytes  int64
	bytes     int64
	index     map[uint64]*list.Element // of *Statement
	lru       list.List                // front = most recently used
	hits      uint64
	misses    uint64
	evictions uint64
	rejected  uint64
}

// NewCache returns a cache of at most size statements and CacheBytes bytes;
// names start with prefix (e.g. "DOORMAN_").
func NewCache(size int, prefix string) *Cache {
	if size < 1 {
		size = 1
	}
	return &Cache{prefix: prefix, seed: maphash.MakeSeed(), max: size, maxBytes: CacheBytes, index: map[uint64]*list.Element{}}
}

// SetSize changes the bound (reload); excess entries go at the next Get.
func (c *Cache) SetSize(size int) {
	c.mu.Lock()
	c.max = max(size, 1)
	c.mu.Unlock()
}

// SetMaxBytes changes the byte bound; excess entries go at the next Get.
func (c *Cache) SetMaxBytes(n int64) {
	c.mu.Lock()
	c.maxBytes = max(n, 1)
	c.mu.Unlock()
}

func (c *Cache) hash(query string, oids []uint32, ctx string) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(query)
	h.WriteByte(0)
	for _, o := range oids {
		h.WriteByte(byte(o))
		h.WriteByte(byte(o >> 8))
		h.WriteByte(byte(o >> 16))
		h.WriteByte(byte(o >> 24))
	}
	h.WriteByte(0)
	h.WriteString(ctx)
	return h.Sum64()
}

// Lookup returns the cached statement for (query, paramOIDs, ctx), marking
// it used, or nil; it creates nothing and counts nothing.
func (c *Cache) Lookup(query string, oids []uint32, ctx string) *Statement {
	k := c.hash(query, oids, ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[k]; ok {
		if st := e.Value.(*Statement); st.same(query, oids, ctx) {
			c.lru.MoveToFront(e)
			return st
		}
	}
	return nil
}

// Get returns the statement for (query, paramOIDs, ctx), creating it on a
// miss. hit reports whether it was already cached.
func (c *Cache) Get(query string, oids []uint32, ctx string) (st *Statement, hit bool) {
	k := c.hash(query, oids, ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[k]; ok {
		st := e.Value.(*Statement)
		if st.same(query, oids, ctx) {
			c.hits++
			c.lru.MoveToFront(e)
			return st, true
		}
		c.removeLocked(e) // hash collision: the newer statement takes the slot
	}
	c.misses++
	st = &Statement{
		Name:      fmt.Sprintf("%s%d", c.prefix, c.seq.Add(1)),
		Query:     query,
		ParamOIDs: append([]uint32(nil), oids...),
		Context:   ctx,
		key:       k,
		size:      statementSize(query, oids, ctx),
	}
	st.parse = protocol.Parse{Name: st.Name, Query: query, ParamOIDs: st.ParamOIDs}.Encode(nil)
	c.index[k] = c.lru.PushFront(st)
	c.bytes += st.size
	for c.lru.Len() > 1 && (c.lru.Len() > c.max || c.bytes > c.maxBytes) {
		c.removeLocked(c.lru.Back())
		c.evictions++
	}
	return st, false
}

func (c *Cache) removeLocked(e *list.Element) {
	st := e.Value.(*Statement)
	c.lru.Remove(e)
	delete(c.index, st.key)
	c.bytes -= st.size
}

// Remove drops st from the shared index because a server rejected its
// Parse: nobody may be answered "already verified" for it, and its memory
// goes with the last client that still names it. It reports whether st
// was cached.
func (c *Cache) Remove(st *Statement) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[st.key]
	if !ok || e.Value.(*Statement) != st {
		return false
	}
	c.removeLocked(e)
	c.rejected++
	return true
}

// Stats returns the counters.
func (c *Cache) Stats() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Counters{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Rejected: c.rejected, Size: c.lru.Len(), Bytes: c.bytes}
}

// Entries lists the cached statements, most recently used first (SHOW
// PREPARED_STATEMENTS).
func (c *Cache) Entries() []*Statement {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Statement, 0, c.lru.Len())
	for e := c.lru.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*Statement))
	}
	return out
}
