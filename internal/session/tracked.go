package session

import "sync/atomic"

// trackedParams are the ParameterStatus values a session still needs once
// the client is logged in: syncedParams (kept equal on every server it
// lands on) and roleParams (re-sent when a server reports another role).
// An array indexed like those two lists, not a map: every idle client
// keeps one, and a map of the dozen parameters of a welcome costs about
// 650 bytes where this costs 120.
type trackedParams struct {
	v   [len(syncedParams) + len(roleParams)]string
	set uint8 // bit i: v[i] was reported to the client
}

// roleIndex is the index of roleParams[j] in trackedParams.
func roleIndex(j int) int { return len(syncedParams) + j }

func trackedName(i int) string {
	if i < len(syncedParams) {
		return syncedParams[i]
	}
	return roleParams[i-len(syncedParams)]
}

func (p *trackedParams) get(i int) (string, bool) { return p.v[i], p.set&(1<<i) != 0 }

func (p *trackedParams) put(i int, v string) {
	p.v[i] = v
	p.set |= 1 << i
}

// putName records a ParameterStatus the client was sent; untracked names
// are dropped.
func (p *trackedParams) putName(name, v string) {
	for i := range p.v {
		if trackedName(i) == name {
			p.put(i, v)
			return
		}
	}
}

// fromMap keeps the tracked names of what a client was told.
func (p *trackedParams) fromMap(m map[string]string) {
	*p = trackedParams{}
	for i := range p.v {
		if v, ok := m[trackedName(i)]; ok {
			p.put(i, v)
		}
	}
}

// toMap is the tracked values as a map (a binary upgrade's record).
func (p *trackedParams) toMap() map[string]string {
	m := make(map[string]string, len(p.v))
	for i := range p.v {
		if v, ok := p.get(i); ok {
			m[trackedName(i)] = v
		}
	}
	return m
}

// trackedRef is a session's trackedParams, shared copy on write: most
// clients of a pooler were told the same values, so a session points at
// the snapshot of the last welcome that had them (trackedShare) and copies
// it only when one of its values changes. An idle client keeps 8 bytes
// here instead of 120. A snapshot, once shared, is never written.
type trackedRef struct{ p *trackedParams }

func (r *trackedRef) get(i int) (string, bool) {
	if r.p == nil {
		return "", false
	}
	return r.p.get(i)
}

// value is v[i], reported or not.
func (r *trackedRef) value(i int) string {
	if r.p == nil {
		return ""
	}
	return r.p.v[i]
}

func (r *trackedRef) put(i int, v string) {
	if cur, ok := r.get(i); ok && cur == v {
		return
	}
	var t trackedParams
	if r.p != nil {
		t = *r.p
	}
	t.put(i, v)
	r.p = &t
}

// putName is trackedParams.putName, copy on write.
func (r *trackedRef) putName(name, v string) {
	for i := range len(syncedParams) + len(roleParams) {
		if trackedName(i) == name {
			r.put(i, v)
			return
		}
	}
}

// fromMap keeps the tracked names of m, sharing share's snapshot when it
// holds the same.
func (r *trackedRef) fromMap(m map[string]string, share *trackedShare) {
	t := new(trackedParams)
	t.fromMap(m)
	r.p = share.intern(t)
}

func (r *trackedRef) toMap() map[string]string {
	if r.p == nil {
		return map[string]string{}
	}
	return r.p.toMap()
}

// trackedShare holds one snapshot, the last welcome's, for the sessions
// that were told the same to share: one pointer however many clients or
// distinct values there are.
type trackedShare struct{ last atomic.Pointer[trackedParams] }

func (s *trackedShare) intern(t *trackedParams) *trackedParams {
	if last := s.last.Load(); last != nil && *last == *t {
		return last
	}
	s.last.Store(t)
	return t
}
