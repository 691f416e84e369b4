package proxy

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/relay"
)

// backend is one host:port of a port, with the connections open to it.
// Its cut channel is the broadcast epoch: closing it tells exactly the
// connections to this backend to end. A backend that comes back later gets
// a new value (and a new channel).
type backend struct {
	addr   string
	cut    chan struct{}
	reason Reason // why cut was closed; written before close, read after

	// Guarded by the port's mu.
	member string
	role   patroni.Role
	active int
	conns  map[*conn]struct{} // open on the relay (attach to detach)
}

func newBackend(t Target) *backend {
	return &backend{addr: t.Addr, member: t.Member, role: t.Role, cut: make(chan struct{})}
}

// portState is the routing state of one port: the backends and the decision
// of the last topology applied. Every field is guarded by mu.
type portState struct {
	mu        sync.Mutex
	backends  map[string]*backend // kept backends by host:port
	eligible  []*backend          // backends for new connections, in Plan order
	refuse    Reason
	fetchedAt time.Time // of the topology applied; zero before the first
	next      int       // rotates the start among equally loaded backends
	closed    bool
	// changed is closed, and replaced, whenever a topology is applied or
	// the port closes: held connections wait on it (a broadcast epoch).
	changed chan struct{}
}

// changes returns the channel closed at the next topology or close.
func (s *portState) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// broadcastLocked wakes the held connections.
func (s *portState) broadcastLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// pick chooses the eligible backend with the fewest active connections,
// skipping tried ones, and counts the new connection on it. Among equals it
// rotates, so short connections spread too. It returns a refusal reason
// instead when the port is closed for new connections.
func (s *portState) pick(now time.Time, maxAge time.Duration, tried map[string]bool) (*backend, Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.refusalLocked(now, maxAge); r != ReasonNone {
		return nil, r
	}
	var best *backend
	n := len(s.eligible)
	for i := range n {
		b := s.eligible[(s.next+i)%n]
		if tried[b.addr] {
			continue
		}
		if best == nil || b.active < best.active {
			best = b
		}
	}
	if best == nil {
		if len(tried) > 0 {
			return nil, ReasonConnectFailed
		}
		return nil, ReasonNoBackends
	}
	s.next++
	best.active++
	return best, ReasonNone
}

// refusal is the reason the port refuses new connections now, if any.
func (s *portState) refusal(now time.Time, maxAge time.Duration) Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusalLocked(now, maxAge)
}

func (s *portState) refusalLocked(now time.Time, maxAge time.Duration) Reason {
	switch {
	case s.closed:
		return ReasonShutdown
	case s.fetchedAt.IsZero():
		return ReasonNoTopology
	case now.Sub(s.fetchedAt) > maxAge:
		return ReasonStaleTopology
	}
	return s.refuse
}

// release uncounts one connection of b.
func (s *portState) release(b *backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b.active--
	if b.active < 0 {
		panic("BUG: backend active count below zero")
	}
}

// cutLocked closes b's epoch and cuts its connections on the relay; the
// port's mu held (Pair.Cut only asks the loop, it never waits).
func (b *backend) cutLocked() {
	close(b.cut)
	for c := range b.conns {
		c.cut = true
		if c.pair != nil {
			c.pair.Cut()
		}
	}
}

// attach puts c in its backend's set of relayed connections, unless the
// backend was cut already (false).
func (s *portState) attach(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-c.b.cut:
		return false
	default:
	}
	if c.b.conns == nil {
		c.b.conns = map[*conn]struct{}{}
	}
	c.b.conns[c] = struct{}{}
	return true
}

// setPair records c's pair, and cuts it if the backend was cut since
// attach.
func (s *portState) setPair(c *conn, p *relay.Pair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.pair = p
	if c.cut {
		p.Cut()
	}
}

// detach takes c out of its backend's set and uncounts it; it reports
// whether c was cut.
func (s *portState) detach(c *conn) (wasCut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(c.b.conns, c)
	c.b.active--
	if c.b.active < 0 {
		panic("BUG: backend active count below zero")
	}
	return c.cut
}

// wasCut reports whether c's backend was cut while c was open.
func (s *portState) wasCut(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.cut
}

// cutNote describes backends cut by apply, for logs and metrics.
type cutNote struct {
	addr, member string
	reason       Reason
	active       int
}

// apply installs plan (from a topology fetched at fetchedAt): backends not
// kept are cut, eligible ones are created or updated; counters of backends
// that stay are preserved. It returns the cut backends and the previous
// refusal reason.
func (s *portState) apply(plan Plan, fetchedAt time.Time) (cuts []cutNote, prevRefuse Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backends == nil {
		s.backends = map[string]*backend{}
	}
	prevRefuse = s.refuse
	if s.fetchedAt.IsZero() {
		prevRefuse = ReasonNoTopology
	}
	for addr, b := range s.backends {
		if plan.Keep[addr] {
			continue
		}
		b.reason = plan.CutReason(addr)
		b.cutLocked()
		delete(s.backends, addr)
		cuts = append(cuts, cutNote{addr: addr, member: b.member, reason: b.reason, active: b.active})
	}
	s.eligible = s.eligible[:0]
	for _, t := range plan.Eligible {
		b, ok := s.backends[t.Addr]
		if !ok {
			b = newBackend(t)
			s.backends[t.Addr] = b
		}
		b.member, b.role = t.Member, t.Role
		s.eligible = append(s.eligible, b)
	}
	s.refuse, s.fetchedAt = plan.Refuse, fetchedAt
	s.broadcastLocked()
	return cuts, prevRefuse
}

// cutAll closes every backend's epoch (shutdown, port removal) and stops
// new connections.
func (s *portState) cutAll(reason Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.broadcastLocked()
	for addr, b := range s.backends {
		b.reason = reason
		b.cutLocked()
		delete(s.backends, addr)
	}
	s.eligible = nil
}

// BackendStat is a snapshot of one backend of a port.
type BackendStat struct {
	Addr     string       `json:"addr"`
	Member   string       `json:"member"`
	Role     patroni.Role `json:"role"`
	Active   int          `json:"active"`
	Eligible bool         `json:"eligible"`
}

// stats returns the backends sorted by address.
func (s *portState) stats() []BackendStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := map[*backend]bool{}
	for _, b := range s.eligible {
		el[b] = true
	}
	out := make([]BackendStat, 0, len(s.backends))
	for _, b := range s.backends {
		out = append(out, BackendStat{Addr: b.addr, Member: b.member, Role: b.role, Active: b.active, Eligible: el[b]})
	}
	sortStats(out)
	return out
}

func sortStats(s []BackendStat) {
	slices.SortFunc(s, func(a, b BackendStat) int { return strings.Compare(a.Addr, b.Addr) })
}

// roleOf reads a backend's Patroni role (see memberOf).
func (s *portState) roleOf(b *backend) patroni.Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	return b.role
}

// memberOf reads a backend's member name, which a topology update may
// rewrite while a connection is being set up.
func (s *portState) memberOf(b *backend) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return b.member
}
