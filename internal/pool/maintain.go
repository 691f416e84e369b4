package pool

import (
	"context"
	"errors"
	"time"
)

// Retain closes idle connections past their idle timeout or lifetime, at
// most budget of them (budget < 0 means no cap). It returns how many it
// closed so that a caller can spread one budget over many pools.
func (p *Pool[T]) Retain(budget int) int {
	p.mu.Lock()
	now := p.now()
	var victims []*Conn[T]
	kept := p.idle[:0]
	for _, c := range p.idle {
		if budget < 0 || len(victims) < budget {
			switch {
			case c.epoch != p.epoch:
				victims = append(victims, c)
				continue
			case c.lifetimeExceeded(now):
				p.counters.LifetimeClosed++
				victims = append(victims, c)
				continue
			case c.idleExpired(now):
				p.counters.IdleExpired++
				victims = append(victims, c)
				continue
			}
		}
		kept = append(kept, c)
	}
	for i := len(kept); i < len(p.idle); i++ {
		p.idle[i] = nil
	}
	p.idle = kept
	for _, c := range victims {
		p.dropLocked(c)
	}
	p.grantCreatesLocked()
	p.upgradeIdlePermitsLocked()
	p.mu.Unlock()
	for _, c := range victims {
		c.closeValue()
	}
	return len(victims)
}

// upgradeIdlePermitsLocked moves the reserve permits of idle connections to
// the main quota where it has room, so the reserve is free for the next
// burst. The coordinator never calls into a pool with its own lock held,
// so taking its lock under ours is safe.
func (p *Pool[T]) upgradeIdlePermitsLocked() {
	for _, c := range p.idle {
		if u, ok := c.permit.(Upgrader); ok && u.Reserve() {
			if !u.Upgrade() {
				return // main is full: the rest cannot move either
			}
			p.counters.PermitUpgrades++
		}
	}
}

// Replenish opens connections until the pool holds MinSize, one burst-gate
// slot at a time. It never waits for the gate: when every slot is taken by
// clients, it stops and reports deferred = true.
func (p *Pool[T]) Replenish(ctx context.Context) (created int, deferred bool, err error) {
	for {
		p.mu.Lock()
		if p.closed || p.paused || p.total >= p.cfg.MinSize {
			p.mu.Unlock()
			return created, false, nil
		}
		if p.creating >= p.cfg.MaxParallelCreates || p.waiters.Len() > 0 {
			p.counters.ReplenishDeferred++
			p.mu.Unlock()
			return created, true, nil
		}
		p.total++
		p.creating++
		p.mu.Unlock()
		c, err := p.create(ctx, nil, permitTryOnly)
		if errors.Is(err, errNoPermit) {
			p.count(func(c *Counters) { c.ReplenishDeferred++ })
			return created, true, nil // the database is at its limit
		}
		if err != nil {
			return created, false, err
		}
		created++
		p.release(c, false, time.Time{}) // warmed, never served: idle_timeout does not apply
	}
}

// Reconnect moves the pool to a new epoch: idle connections are closed now,
// checked-out ones when they come back.
func (p *Pool[T]) Reconnect() {
	p.mu.Lock()
	p.epoch++
	victims := p.idle
	p.idle = nil
	for _, c := range victims {
		p.dropLocked(c)
	}
	p.grantCreatesLocked()
	p.mu.Unlock()
	for _, c := range victims {
		c.closeValue()
	}
}

// Pause stops handing out connections and closes idle ones; connections in
// use are closed as they come back. It waits until none is in use or ctx
// ends. Acquire calls made while paused wait for Resume.
func (p *Pool[T]) Pause(ctx context.Context) error {
	p.mu.Lock()
	if !p.paused {
		p.paused = true
		p.resume = make(chan struct{})
	}
	victims := p.idle
	p.idle = nil
	for _, c := range victims {
		p.dropLocked(c)
	}
	done := make(chan struct{})
	if p.busy+p.creating == 0 {
		close(done)
	} else {
		p.drained = append(p.drained, done)
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.closeValue()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Resume lets waiting and new Acquire calls proceed.
func (p *Pool[T]) Resume() {
	p.mu.Lock()
	if p.paused {
		p.paused = false
		close(p.resume)
	}
	p.grantCreatesLocked()
	p.mu.Unlock()
}

// Close closes idle connections, fails every waiter with ErrClosed and makes
// later Acquire calls fail. Busy connections are closed when released.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	victims := p.idle
	p.idle = nil
	for _, c := range victims {
		p.dropLocked(c)
	}
	for w := p.waiters.front(); w != nil; w = p.waiters.front() {
		p.waiters.remove(w)
		w.ch <- grant[T]{err: ErrClosed} // create-only waiters too
	}
	if p.paused {
		p.paused = false
		close(p.resume)
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.closeValue()
	}
}

// Stats returns a consistent snapshot.
func (p *Pool[T]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{
		Idle: len(p.idle), Busy: p.busy, Creating: p.creating, Total: p.total,
		Waiting: p.waiters.Len(), Epoch: p.epoch, Paused: p.paused, Counters: p.counters,
	}
	if w := p.waiters.front(); w != nil {
		s.MaxWait = p.now().Sub(w.since)
	}
	return s
}

// GateFull reports whether the connects in flight are at the burst gate's
// limit (scaling_max_parallel_creates): an acquire that waited now would
// count a burst-gate wait.
func (p *Pool[T]) GateFull() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.creating >= p.cfg.MaxParallelCreates
}

// IdleConn is a snapshot of one idle connection.
type IdleConn[T Resource] struct {
	Value      T
	CreatedAt  time.Time
	ReturnedAt time.Time
	Epoch      uint64
}

// IdleSnapshot lists the idle connections (SHOW SERVERS). Values must only
// be read: the pool may hand them out right after.
func (p *Pool[T]) IdleSnapshot() []IdleConn[T] {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]IdleConn[T], len(p.idle))
	for i, c := range p.idle {
		out[i] = IdleConn[T]{Value: c.Value, CreatedAt: c.createdAt, ReturnedAt: c.returnedAt, Epoch: c.epoch}
	}
	return out
}

// Load is what the pool coordinator needs to rank pools.
type Load struct {
	Idle, Total, Queued int
}

// Load reports idle connections, connections that hold a permit (idle and
// busy) and queued clients.
func (p *Pool[T]) Load() Load {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Load{Idle: len(p.idle), Total: p.total - p.creating, Queued: p.waiters.Len()}
}

// EvictIdle closes the oldest idle connection older than minAge, unless the
// pool would drop to floor connections or fewer. Closing returns its
// permit before EvictIdle returns.
func (p *Pool[T]) EvictIdle(minAge time.Duration, floor int) bool {
	p.mu.Lock()
	if p.total-p.creating <= floor {
		p.mu.Unlock()
		return false
	}
	now := p.now()
	for i, c := range p.idle {
		if now.Sub(c.createdAt) < minAge {
			continue
		}
		copy(p.idle[i:], p.idle[i+1:])
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		p.dropLocked(c)
		p.counters.Evicted++
		p.mu.Unlock()
		c.closeValue()
		return true
	}
	p.mu.Unlock()
	return false
}
