package coordinator

import (
	"context"
	"fmt"
)

// TryAcquire is the non-blocking fast path: a main permit if main has room.
// The pool calls it inside its burst-gate slot, and the retain task's
// replenish uses it alone (it gives up when the database is at its limit).
func (u *User) TryAcquire() (*Permit, bool) {
	c := u.c
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.tryLocked(u, PhaseA, false)
	return p, p != nil
}

// Acquire runs phases A, R, B, C, D and E for one new backend connection.
// It blocks at most ReservePoolTimeout (phase C) or until ctx is done. The
// error is an *ExhaustedError (phase E) or wraps ctx.Err().
func (u *User) Acquire(ctx context.Context) (*Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("acquire database permit: %w", err)
	}
	if p, ok := u.TryAcquire(); ok {
		return p, nil
	}
	sc := u.score() // Member call: outside mu
	c := u.c
	gen := c.idleGen.Load()
	c.mu.Lock()
	p := c.tryLocked(u, PhaseA, false) // room may have appeared meanwhile
	if p == nil {
		p = c.tryReserveLocked(u, PhaseR)
	}
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	if p = u.evict(PhaseB); p != nil {
		return p, nil
	}
	p, err := u.wait(ctx, sc, gen)
	if p != nil || err != nil {
		return p, err
	}
	return u.lastTry()
}

func (c *Coordinator) tryReserveLocked(u *User, ph Phase) *Permit {
	if c.reserveUsed >= c.cfg.ReservePoolSize {
		return nil
	}
	c.reserveUsed++
	c.counters.ReserveAcquisitions++
	return &Permit{c: c, user: u, phase: ph, reserve: true}
}

// lastTry is phase D (reserve retry; main too, in case a slot freed after
// the wait ended) and phase E.
func (u *User) lastTry() (*Permit, error) {
	c := u.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.tryLocked(u, PhaseD, true); p != nil {
		return p, nil
	}
	c.counters.Exhaustions++
	return nil, &ExhaustedError{
		Database: c.cfg.Database, User: u.name, Max: c.cfg.MaxDBConnections,
		ReserveSize: c.cfg.ReservePoolSize, ReserveUsed: c.reserveUsed,
	}
}

// wait is phase C. Each round tries the cheap path (a free slot) first and
// evicts only after an idle return was seen, so a wake-up caused by a
// released permit never closes a neighbour's backend: released permits are
// handed to the best-ranked waiter directly. It returns (nil, nil) when the
// budget is spent.
func (u *User) wait(ctx context.Context, sc score, gen uint64) (*Permit, error) {
	c := u.c
	timer := c.clock.NewTimer(c.cfg.ReservePoolTimeout)
	defer timer.Stop()
	c.mu.Lock()
	c.seq++
	w := &waiter{user: u, sc: sc, seq: c.seq, ch: make(chan *Permit, 1)}
	c.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for database permit: %w", ctx.Err())
		case <-timer.C():
			return nil, nil
		default:
		}
		c.mu.Lock()
		if p := c.tryLocked(u, PhaseC, true); p != nil {
			c.mu.Unlock()
			return p, nil
		}
		c.addWaiterLocked(w) // before reading idleGen: see NotifyIdleReturn
		if g := c.idleGen.Load(); g != gen {
			gen = g
			c.removeWaiterLocked(w)
			c.mu.Unlock()
			if p := u.evict(PhaseC); p != nil {
				return p, nil
			}
			continue
		}
		c.mu.Unlock()
		select {
		case p := <-w.ch:
			if p != nil {
				return p, nil
			}
			// An idle return elsewhere: idleGen moved, the next round
			// tries the cheap path and then eviction.
		case <-timer.C():
			return c.leave(w), nil
		case <-ctx.Done():
			if p := c.leave(w); p != nil {
				p.Release()
			}
			return nil, fmt.Errorf("wait for database permit: %w", ctx.Err())
		}
	}
}
