package pool

import (
	"context"
	"errors"
)

// Permit is a connection permit of the pool coordinator.
type Permit interface {
	Release()
}

// Upgrader is a permit that may move from the reserve to the main quota.
type Upgrader interface {
	Reserve() bool
	Upgrade() bool
}

// permitMode says how create gets a coordinator permit.
type permitMode int

const (
	// permitJIT: the fast path inside the burst-gate slot, else the slot
	// is given back while the coordinator waits (phases R to E).
	permitJIT permitMode = iota
	// permitTryOnly: the fast path only; replenish gives up at the limit.
	permitTryOnly
)

// errNoPermit ends a permitTryOnly create when the database is at its limit.
var errNoPermit = errors.New("no database permit without waiting")

func (p *Pool[T]) tryPermitFast() (Permit, bool) {
	if p.tryPerm == nil {
		return nil, false
	}
	return p.tryPerm()
}

// createAfterPermit is the coordinator's slow path. Waiting for a permit
// (reserve, eviction, a neighbour's return) can take up to
// reserve_pool_timeout; the burst-gate slot is given back meanwhile so that
// the pool's other connects go on, and taken again, first in line, with
// the permit in hand. A connection returned in the meantime is taken
// instead when the pool is full, and the permit is released.
func (p *Pool[T]) createAfterPermit(ctx context.Context) (*Conn[T], error) {
	p.mu.Lock()
	p.leaveSlotLocked()
	p.counters.PermitWaits++
	p.mu.Unlock()
	pm, err := p.permit(ctx)
	if err != nil {
		p.count(func(c *Counters) { c.CreateErrors++ })
		return nil, err // the coordinator's own error (exhausted, timeout)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		if pm != nil { // nil when a reload removed the coordinator meanwhile
			pm.Release()
		}
		return nil, ErrClosed
	}
	if !p.paused && p.total < p.cfg.MaxSize && p.creating < p.cfg.MaxParallelCreates {
		p.total++
		p.creating++
		p.mu.Unlock()
		return p.create(ctx, pm, permitJIT)
	}
	w := p.newWaiterLocked(true)
	w.createOnly, w.permit = true, pm
	p.waiters.pushFront(w)
	p.startWaitLocked(ctx, Bounds{}, w)
	p.mu.Unlock()
	return p.wait(ctx, Bounds{}, w) // ctx has the caller's Bounds in it already (createWithin)
}
