package prepared

import "container/list"

// ClientMap maps a client's statement names to statements, LRU-bounded.
// Not safe for concurrent use.
type ClientMap struct {
	max   int // 0 = unlimited
	names map[string]*list.Element
	lru   list.List // of *clientEntry, front = most recent
}

type clientEntry struct {
	name string
	st   *Statement
}

// NewClientMap returns a map holding at most max names (0 = unlimited).
func NewClientMap(max int) *ClientMap {
	return &ClientMap{max: max, names: map[string]*list.Element{}}
}

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
		e.Value.(*clientEntry).st = st
		m.lru.MoveToFront(e)
		return 0
	}
	m.names[name] = m.lru.PushFront(&clientEntry{name: name, st: st})
	n := 0
	for m.max > 0 && m.lru.Len() > m.max {
		old := m.lru.Back()
		m.lru.Remove(old)
		delete(m.names, old.Value.(*clientEntry).name)
		n++
	}
	return n
}

// Delete forgets name.
func (m *ClientMap) Delete(name string) {
	if e, ok := m.names[name]; ok {
		m.lru.Remove(e)
		delete(m.names, name)
	}
}

// Clear forgets every name (DEALLOCATE ALL, DISCARD ALL).
func (m *ClientMap) Clear() {
	m.names = map[string]*list.Element{}
	m.lru.Init()
}

// Len is the number of names.
func (m *ClientMap) Len() int { return m.lru.Len() }

// ServerSet is the set of statements prepared on one server connection,
// LRU-bounded. Not safe for concurrent use.
type ServerSet struct {
	max int
	m   map[*Statement]*list.Element
	lru list.List // of *Statement
}

// NewServerSet returns a set of at most max statements.
func NewServerSet(max int) *ServerSet {
	return &ServerSet{max: max, m: map[*Statement]*list.Element{}}
}

// Has reports whether st is prepared there, marking it used.
func (s *ServerSet) Has(st *Statement) bool {
	e, ok := s.m[st]
	if ok {
		s.lru.MoveToFront(e)
	}
	return ok
}

// Add records st as prepared and returns the statement evicted to make
// room (the caller must Close it on the server), or nil.
func (s *ServerSet) Add(st *Statement) (evicted *Statement) {
	if e, ok := s.m[st]; ok {
		s.lru.MoveToFront(e)
		return nil
	}
	if s.max > 0 && s.lru.Len() >= s.max {
		old := s.lru.Back()
		s.lru.Remove(old)
		evicted = old.Value.(*Statement)
		delete(s.m, evicted)
	}
	s.m[st] = s.lru.PushFront(st)
	return evicted
}

// Remove forgets st (its Parse failed or was skipped after an error).
func (s *ServerSet) Remove(st *Statement) {
	if e, ok := s.m[st]; ok {
		s.lru.Remove(e)
		delete(s.m, st)
	}
}

// Clear forgets everything (DEALLOCATE ALL or DISCARD ALL ran there).
func (s *ServerSet) Clear() {
	s.m = map[*Statement]*list.Element{}
	s.lru.Init()
}

// Len is the number of statements.
func (s *ServerSet) Len() int { return s.lru.Len() }
