package session

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
