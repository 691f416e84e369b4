package prepared

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
)

func TestCacheIdentity(t *testing.T) {
	c := NewCache(10, "DOORMAN_")
	a, hit := c.Get("SELECT $1", []uint32{23}, "")
	require.False(t, hit)
	b, hit := c.Get("SELECT $1", []uint32{23}, "")
	require.True(t, hit)
	require.Same(t, a, b)
	require.Same(t, a, c.Lookup("SELECT $1", []uint32{23}, ""))
	require.Nil(t, c.Lookup("SELECT $1", []uint32{25}, ""), "Lookup creates nothing")
	require.Equal(t, Counters{Hits: 1, Misses: 1, Size: 1, Bytes: a.Size()}, c.Stats(), "nor counts")
	tests := []struct {
		name  string
		query string
		oids  []uint32
		ctx   string
	}{
		{"other parameter types", "SELECT $1", []uint32{25}, ""},
		{"no parameter types", "SELECT $1", nil, ""},
		{"other search_path", "SELECT $1", []uint32{23}, "SET search_path TO other;"},
		{"other text", "SELECT $1 ", []uint32{23}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, hit := c.Get(tt.query, tt.oids, tt.ctx)
			require.False(t, hit)
			require.NotEqual(t, a.Name, st.Name)
		})
	}
	var p protocol.Parse
	require.NoError(t, p.Decode(protocol.Frame(a.Parse()).Body()))
	require.Equal(t, a.Name, p.Name)
	require.Equal(t, "SELECT $1", p.Query)
	require.Equal(t, []uint32{23}, p.ParamOIDs)
}

func TestCacheBoundedUnderConcurrency(t *testing.T) {
	c := NewCache(300, "S")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if st, _ := c.Get(fmt.Sprintf("SELECT %d", (g*7919+i)%1000), nil, ""); st.Name == "" {
					t.Error("statement without a name")
				}
			}
		}(g)
	}
	wg.Wait()
	s := c.Stats()
	require.LessOrEqual(t, s.Size, 300, "the bound holds under concurrency")
	require.Len(t, c.Entries(), s.Size)
	require.Equal(t, uint64(16000), s.Hits+s.Misses)
	require.Greater(t, s.Evictions, uint64(0))
}

func TestEvictedStatementStaysUsable(t *testing.T) {
	c := NewCache(1, "S")
	a, _ := c.Get("SELECT 1", nil, "")
	m := NewClientMap(0)
	m.Put("mine", a)
	c.Get("SELECT 2", nil, "") // evicts a from the shared index
	require.Same(t, a, m.Get("mine"), "the client keeps its statement")
	again, hit := c.Get("SELECT 1", nil, "")
	require.False(t, hit)
	require.NotEqual(t, a.Name, again.Name, "a new entry gets a new server name")
}

func TestClientMapLRU(t *testing.T) {
	m := NewClientMap(2)
	a, b, c := &Statement{Name: "a"}, &Statement{Name: "b"}, &Statement{Name: "c"}
	require.Equal(t, 0, m.Put("x", a))
	require.Equal(t, 0, m.Put("y", b))
	require.Same(t, a, m.Get("x")) // x is now most recent
	require.Equal(t, 1, m.Put("z", c))
	require.Nil(t, m.Get("y"), "least recently used name evicted")
	require.Same(t, a, m.Get("x"))
	m.Delete("x")
	require.Nil(t, m.Get("x"))
	m.Clear()
	require.Equal(t, 0, m.Len())
	unlimited := NewClientMap(0)
	for i := 0; i < 1000; i++ {
		require.Equal(t, 0, unlimited.Put(fmt.Sprint(i), a))
	}
	require.Equal(t, 1000, unlimited.Len())
}

func TestServerSet(t *testing.T) {
	s := NewServerSet(2)
	a, b, c := &Statement{Name: "a"}, &Statement{Name: "b"}, &Statement{Name: "c"}
	require.Nil(t, s.Add(a))
	require.Nil(t, s.Add(b))
	require.True(t, s.Has(a)) // a most recent
	require.Equal(t, []*Statement{b}, s.Add(c), "the evicted statement is returned so the caller can Close it")
	require.False(t, s.Has(b))
	s.Remove(a)
	require.False(t, s.Has(a))
	s.Clear()
	require.Equal(t, 0, s.Len())
}

func TestCacheByteBound(t *testing.T) {
	c := NewCache(1000, "S")
	one := statementSize("SELECT 'xxxxxxxx'", nil, "")
	c.SetMaxBytes(3 * one)
	first, _ := c.Get("SELECT 'xxxxxxxx'", nil, "")
	for _, q := range []string{"SELECT 'yyyyyyyy'", "SELECT 'zzzzzzzz'"} {
		c.Get(q, nil, "")
	}
	_, hit := c.Get("SELECT 'xxxxxxxx'", nil, "") // first is now most recent
	require.True(t, hit)
	c.Get("SELECT 'wwwwwwww'", nil, "")
	s := c.Stats()
	require.Equal(t, 3, s.Size, "the byte bound evicts like the count bound")
	require.Equal(t, 3*one, s.Bytes)
	require.Equal(t, uint64(1), s.Evictions)
	_, hit = c.Get("SELECT 'yyyyyyyy'", nil, "")
	require.False(t, hit, "the least recently used entry went")
	_, hit = c.Get("SELECT 'xxxxxxxx'", nil, "")
	require.True(t, hit)
	require.Equal(t, first.Name, c.Entries()[0].Name)

	huge := string(make([]byte, 10*one))
	st, _ := c.Get(huge, nil, "")
	require.Equal(t, []*Statement{st}, c.Entries(), "a statement above the bound is kept alone")
	require.Equal(t, st.Size(), c.Stats().Bytes)
}

func TestCacheRemoveRejected(t *testing.T) {
	c := NewCache(10, "S")
	bad, _ := c.Get("SELEC 1", nil, "")
	good, _ := c.Get("SELECT 1", nil, "")
	require.True(t, c.Remove(bad))
	require.False(t, c.Remove(bad), "removing twice is harmless")
	s := c.Stats()
	require.Equal(t, 1, s.Size)
	require.Equal(t, good.Size(), s.Bytes)
	require.Equal(t, uint64(1), s.Rejected)
	again, hit := c.Get("SELEC 1", nil, "")
	require.False(t, hit, "a rejected statement is not answered from the cache")
	require.NotEqual(t, bad.Name, again.Name)
	require.False(t, c.Remove(bad), "a stale pointer does not remove its successor")
	require.Equal(t, 2, c.Stats().Size)
}

func TestClientMapByteBound(t *testing.T) {
	c := NewCache(10, "S")
	a, _ := c.Get("SELECT 'aaaa'", nil, "")
	b, _ := c.Get("SELECT 'bbbb'", nil, "")
	d, _ := c.Get("SELECT 'dddd'", nil, "")
	m := NewClientMap(0)
	per := nameOverhead + 1 + a.Size()
	m.SetMaxBytes(2 * per)
	require.Equal(t, 0, m.Put("x", a))
	require.Equal(t, 0, m.Put("y", b))
	require.Same(t, a, m.Get("x"))
	require.Equal(t, 1, m.Put("z", d), "over the byte bound: LRU eviction")
	require.Nil(t, m.Get("y"))
	require.Equal(t, 2*per, m.Bytes())
	m.Delete("x")
	require.Equal(t, per, m.Bytes())
	m.Clear()
	require.Equal(t, int64(0), m.Bytes())
}

func TestServerSetByteBound(t *testing.T) {
	c := NewCache(10, "S")
	a, _ := c.Get("SELECT 'aaaa'", nil, "")
	b, _ := c.Get("SELECT 'bbbb'", nil, "")
	big, _ := c.Get("SELECT '"+string(make([]byte, 3*a.Size()))+"'", nil, "")
	s := NewServerSet(100)
	s.SetMaxBytes(3 * a.Size())
	require.Nil(t, s.Add(a))
	require.Nil(t, s.Add(b))
	require.Equal(t, []*Statement{a, b}, s.Add(big), "every statement evicted to fit, least recently used first")
	require.Equal(t, 1, s.Len())
	require.Equal(t, big.Size(), s.Bytes())
	s.Remove(big)
	require.Equal(t, int64(0), s.Bytes())
}

// TestCountFollowsLen: Count, which SHOW CLIENTS and SHOW SERVERS read from
// another goroutine, equals Len after every kind of change; run with -race
// it also checks that reading it while the owner changes the set is safe.
func TestCountFollowsLen(t *testing.T) {
	a, b, c := &Statement{Name: "a"}, &Statement{Name: "b"}, &Statement{Name: "c"}
	clientSteps := []struct {
		name string
		do   func(m *ClientMap)
		want int
	}{
		{"put", func(m *ClientMap) { m.Put("x", a) }, 1},
		{"put another", func(m *ClientMap) { m.Put("y", b) }, 2},
		{"put a name again", func(m *ClientMap) { m.Put("x", c) }, 2},
		{"put past the bound evicts", func(m *ClientMap) { m.Put("z", c) }, 2},
		{"delete", func(m *ClientMap) { m.Delete("z") }, 1},
		{"delete a name not there", func(m *ClientMap) { m.Delete("nope") }, 1},
		{"clear", func(m *ClientMap) { m.Clear() }, 0},
	}
	m := NewClientMap(2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a reader, as the admin console is
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				assert.LessOrEqual(t, m.Count(), 2) // not require: not the test's goroutine
			}
		}
	}()
	for _, st := range clientSteps {
		st.do(m)
		require.Equal(t, m.Len(), m.Count(), st.name)
		require.Equal(t, st.want, m.Count(), st.name)
	}
	close(stop)
	wg.Wait()

	serverSteps := []struct {
		name string
		do   func(s *ServerSet)
		want int
	}{
		{"add", func(s *ServerSet) { s.Add(a) }, 1},
		{"add again", func(s *ServerSet) { s.Add(a) }, 1},
		{"add another", func(s *ServerSet) { s.Add(b) }, 2},
		{"add past the bound evicts", func(s *ServerSet) { s.Add(c) }, 2},
		{"remove", func(s *ServerSet) { s.Remove(c) }, 1},
		{"remove one not there", func(s *ServerSet) { s.Remove(c) }, 1},
		{"clear", func(s *ServerSet) { s.Clear() }, 0},
	}
	s := NewServerSet(2)
	for _, st := range serverSteps {
		st.do(s)
		require.Equal(t, s.Len(), s.Count(), st.name)
		require.Equal(t, st.want, s.Count(), st.name)
	}
}
