package prepared

import (
	"container/list"
	"sync/atomic"
)

// nameOverhead approximates what one client name costs besides the
// statement it keeps alive: map entry, list element, the entry struct.
const nameOverhead = 96

// ClientMap maps a client's statement names to statements, bounded by
// count and by the bytes of the statements it keeps alive (LRU for both).
// Not safe for concurrent use, except Count.
type ClientMap struct {
	max      int // 0 = no count bound
	maxBytes int64
	bytes    int64
	names    map[string]*list.Element
	lru      list.List    // of *clientEntry, front = most recent
	count    atomic.Int32 // lru.Len(), for readers on other goroutines
}

type clientEntry struct {
	name string
	st   *Statement
}

func (e *clientEntry) size() int64 { return nameOverhead + int64(len(e.name)) + e.st.size }

// NewClientMap returns a map holding at most max names (0 = no count
// bound) and ClientBytes bytes.
func NewClientMap(max int) *ClientMap {
	return &ClientMap{max: max, maxBytes: ClientBytes, names: map[string]*list.Element{}}
}

// SetMaxBytes changes the byte bound; it applies from the next Put.
func (m *ClientMap) SetMaxBytes(n int64) { m.maxBytes = max(n, 1) }

// Get returns the statement the client named name, marking it used.
func (m *ClientMap) Get(name string) *Statement {
	e, ok := m.names[name]
	if !ok {
		return nil
	}
	m.lru.MoveToFront(e)
	return e.Value.(*clientEntry).st
}

// Put binds name to st. It reports how many names were evicted.
func (m *ClientMap) Put(name string, st *Statement) int {
	if e, ok := m.names[name]; ok {
		ce := e.Value.(*clientEntry)
		m.bytes += st.size - ce.st.size
		ce.st = st
		m.lru.MoveToFront(e)
	} else {
		ce := &clientEntry{name: name, st: st}
		m.names[name] = m.lru.PushFront(ce)
		m.bytes += ce.size()
		m.count.Add(1)
	}
	n := 0
	for m.lru.Len() > 1 && ((m.max > 0 && m.lru.Len() > m.max) || m.bytes > m.maxBytes) {
		m.remove(m.lru.Back())
		n++
	}
	return n
}

func (m *ClientMap) remove(e *list.Element) {
	ce := e.Value.(*clientEntry)
	m.lru.Remove(e)
	delete(m.names, ce.name)
	m.bytes -= ce.size()
	m.count.Add(-1)
}

// Delete forgets name.
func (m *ClientMap) Delete(name string) {
	if e, ok := m.names[name]; ok {
		m.remove(e)
	}
}

// Clear forgets every name (DEALLOCATE ALL, DISCARD ALL).
func (m *ClientMap) Clear() {
	m.names = map[string]*list.Element{}
	m.lru.Init()
	m.bytes = 0
	m.count.Store(0)
}

// Len is the number of names.
func (m *ClientMap) Len() int { return m.lru.Len() }

// Count is Len for any goroutine: the number of names as of the owner's
// last change (SHOW CLIENTS' prepared_statements).
func (m *ClientMap) Count() int { return int(m.count.Load()) }

// Bytes is what the map accounts against its byte bound.
func (m *ClientMap) Bytes() int64 { return m.bytes }

// ServerSet is the set of statements prepared on one server connection,
// bounded by count and by the bytes of their text (LRU for both). Not safe
// for concurrent use, except Count.
type ServerSet struct {
	max      int
	maxBytes int64
	bytes    int64
	m        map[*Statement]*list.Element
	lru      list.List    // of *Statement
	count    atomic.Int32 // lru.Len(), for readers on other goroutines
}

// NewServerSet returns a set of at most max statements (0 = no count
// bound) and ServerBytes bytes.
func NewServerSet(max int) *ServerSet {
	return &ServerSet{max: max, maxBytes: ServerBytes, m: map[*Statement]*list.Element{}}
}

// SetMaxBytes changes the byte bound; it applies from the next Add.
func (s *ServerSet) SetMaxBytes(n int64) { s.maxBytes = max(n, 1) }

// Has reports whether st is prepared there, marking it used.
func (s *ServerSet) Has(st *Statement) bool {
	e, ok := s.m[st]
	if ok {
		s.lru.MoveToFront(e)
	}
	return ok
}

// Add records st as prepared and returns the statements evicted to make
// room, least recently used first (the caller must Close them on the
// server). The result is nil unless a bound is exceeded.
func (s *ServerSet) Add(st *Statement) (evicted []*Statement) {
	if e, ok := s.m[st]; ok {
		s.lru.MoveToFront(e)
		return nil
	}
	s.m[st] = s.lru.PushFront(st)
	s.bytes += st.size
	s.count.Add(1)
	for s.lru.Len() > 1 && ((s.max > 0 && s.lru.Len() > s.max) || s.bytes > s.maxBytes) {
		old := s.lru.Back().Value.(*Statement)
		s.Remove(old)
		evicted = append(evicted, old)
	}
	return evicted
}

// Remove forgets st (its Parse failed or was skipped after an error).
func (s *ServerSet) Remove(st *Statement) {
	if e, ok := s.m[st]; ok {
		s.lru.Remove(e)
		delete(s.m, st)
		s.bytes -= st.size
		s.count.Add(-1)
	}
}

// Clear forgets everything (DEALLOCATE ALL or DISCARD ALL ran there).
func (s *ServerSet) Clear() {
	s.m = map[*Statement]*list.Element{}
	s.lru.Init()
	s.bytes = 0
	s.count.Store(0)
}

// Len is the number of statements.
func (s *ServerSet) Len() int { return s.lru.Len() }

// Count is Len for any goroutine: the number of statements as of the
// owner's last change (SHOW SERVERS' prepared_statements).
func (s *ServerSet) Count() int { return int(s.count.Load()) }

// Bytes is what the set accounts against its byte bound.
func (s *ServerSet) Bytes() int64 { return s.bytes }

// ClientEntry is one name of a ClientMap.
type ClientEntry struct {
	Name      string
	Statement *Statement
}

// Entries lists the names, least recently used first (Put them in this
// order to rebuild the map with the same LRU order).
func (m *ClientMap) Entries() []ClientEntry {
	out := make([]ClientEntry, 0, m.lru.Len())
	for e := m.lru.Back(); e != nil; e = e.Prev() {
		ce := e.Value.(*clientEntry)
		out = append(out, ClientEntry{Name: ce.name, Statement: ce.st})
	}
	return out
}
