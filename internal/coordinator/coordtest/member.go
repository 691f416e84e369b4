package coordtest

import (
	"sync"
	"time"

	"github.com/doorman-go/doorman/internal/coordinator"
)

// Conn is one fake backend connection.
type Conn struct {
	Permit  *coordinator.Permit
	Created time.Time
	idle    bool
}

// Member is a fake user pool. Queued and P95 are what Load reports.
type Member struct {
	clk *Clock

	mu         sync.Mutex
	conns      []*Conn
	queued     int
	p95        time.Duration
	evictCalls int
	floors     []int  // floor argument of each EvictIdle call
	onEvict    func() // run at the start of EvictIdle, outside mu
}

// NewMember builds an empty pool that ages connections by clk.
func NewMember(clk *Clock) *Member { return &Member{clk: clk} }

// Set sets the queued clients and the cached p95 reported by Load.
func (m *Member) Set(queued int, p95 time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queued, m.p95 = queued, p95
}

// OnEvict installs a hook run at the start of every EvictIdle call.
func (m *Member) OnEvict(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onEvict = f
}

// Add records a new connection holding p, created now.
func (m *Member) Add(p *coordinator.Permit, idle bool) *Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &Conn{Permit: p, Created: m.clk.Now(), idle: idle}
	m.conns = append(m.conns, c)
	return c
}

// SetIdle marks a connection idle or busy.
func (m *Member) SetIdle(c *Conn, idle bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.idle = idle
}

// Close drops a connection and releases its permit.
func (m *Member) Close(c *Conn) {
	m.mu.Lock()
	m.removeLocked(c)
	m.mu.Unlock()
	c.Permit.Release()
}

func (m *Member) removeLocked(c *Conn) {
	for i, x := range m.conns {
		if x == c {
			m.conns = append(m.conns[:i], m.conns[i+1:]...)
			return
		}
	}
}

// Load implements coordinator.Member.
func (m *Member) Load() coordinator.Load {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := coordinator.Load{Total: len(m.conns), Queued: m.queued, P95: m.p95}
	for _, c := range m.conns {
		if c.idle {
			l.Idle++
		}
	}
	return l
}

// EvictIdle implements coordinator.Member: it closes the oldest idle
// connection at least minAge old if the pool holds more than floor.
func (m *Member) EvictIdle(minAge time.Duration, floor int) bool {
	m.mu.Lock()
	hook := m.onEvict
	m.evictCalls++
	m.floors = append(m.floors, floor)
	m.mu.Unlock()
	if hook != nil {
		hook()
	}
	now := m.clk.Now()
	m.mu.Lock()
	var victim *Conn
	if len(m.conns) > floor {
		for _, c := range m.conns {
			if c.idle && now.Sub(c.Created) >= minAge && (victim == nil || c.Created.Before(victim.Created)) {
				victim = c
			}
		}
	}
	if victim != nil {
		m.removeLocked(victim)
	}
	m.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Permit.Release()
	return true
}

// EvictCalls is how many times EvictIdle ran.
func (m *Member) EvictCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.evictCalls
}

// Floors lists the floor argument of every EvictIdle call.
func (m *Member) Floors() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.floors...)
}

// CloseAll closes every connection and returns how many there were.
func (m *Member) CloseAll() int {
	m.mu.Lock()
	conns := m.conns
	m.conns = nil
	m.mu.Unlock()
	for _, c := range conns {
		c.Permit.Release()
	}
	return len(conns)
}
