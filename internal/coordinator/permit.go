package coordinator

// Phase names the acquire phase that granted a permit.
type Phase uint8

// Phases of the spec. Upgrade does not change a permit's phase.
const (
	PhaseA Phase = iota + 1 // try-acquire main
	PhaseR                  // reserve-first
	PhaseB                  // after evicting a neighbour's idle connection
	PhaseC                  // handed over or taken while waiting
	PhaseD                  // reserve retry after the wait
)

func (p Phase) String() string {
	switch p {
	case PhaseA:
		return "A"
	case PhaseR:
		return "R"
	case PhaseB:
		return "B"
	case PhaseC:
		return "C"
	case PhaseD:
		return "D"
	}
	return "?"
}

// Permit is the right to hold one backend connection to the database. The
// pool keeps it with the connection and releases it when the connection is
// closed. Its fields are guarded by the coordinator's mutex.
type Permit struct {
	c        *Coordinator
	user     *User
	phase    Phase
	reserve  bool
	released bool
}

// Reserve reports whether the permit counts against reserve_pool_size.
func (p *Permit) Reserve() bool {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.reserve
}

// Phase is the phase that granted the permit.
func (p *Permit) Phase() Phase { return p.phase }

// User is the handle the permit was granted to.
func (p *Permit) User() *User { return p.user }

// Release gives the slot back: to the best-ranked waiter if one is parked
// in phase C, else to its semaphore. Releasing twice is a bug and panics.
func (p *Permit) Release() {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.released {
		panic("BUG: coordinator permit released twice")
	}
	p.released = true
	c.freeLocked(p.reserve)
}

// Upgrade turns a reserve permit into a main one when main has room, which
// returns a slot to the reserve. It reports whether it did; a main or
// released permit is never upgraded.
func (p *Permit) Upgrade() bool {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !p.reserve || p.released || c.mainUsed >= c.cfg.MaxDBConnections {
		return false
	}
	c.mainUsed++
	p.reserve = false
	c.freeLocked(true)
	return true
}

// UpgradeReserve upgrades the given permits (the reserve permits of one idle
// pool, as the retain task finds them) in order and stops at the first one
// that cannot be upgraded because main is full. Main permits are skipped.
// It returns how many were upgraded.
func (c *Coordinator) UpgradeReserve(permits []*Permit) int {
	n := 0
	for _, p := range permits {
		if p == nil || !p.Reserve() {
			continue
		}
		if !p.Upgrade() {
			break
		}
		n++
	}
	return n
}

// freeLocked returns one slot of the given kind. While waiters exist both
// semaphores are full (a waiter parks only after failing both under mu),
// so the slot goes straight to the best-ranked waiter.
func (c *Coordinator) freeLocked(reserve bool) {
	if w := c.popBestLocked(nil); w != nil {
		p := &Permit{c: c, user: w.user, phase: PhaseC, reserve: reserve}
		if reserve {
			c.counters.ReserveAcquisitions++
		}
		w.ch <- p
		return
	}
	if reserve {
		c.reserveUsed--
	} else {
		c.mainUsed--
	}
}

// tryLocked takes a main permit, then a reserve one if allowReserve.
func (c *Coordinator) tryLocked(u *User, ph Phase, allowReserve bool) *Permit {
	if c.mainUsed < c.cfg.MaxDBConnections {
		c.mainUsed++
		return &Permit{c: c, user: u, phase: ph}
	}
	if allowReserve && c.reserveUsed < c.cfg.ReservePoolSize {
		c.reserveUsed++
		c.counters.ReserveAcquisitions++
		return &Permit{c: c, user: u, phase: ph, reserve: true}
	}
	return nil
}
