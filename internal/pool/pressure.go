package pool

import (
	"context"
	"time"
)

// wait blocks a queued acquire until it is handed a connection or a create
// slot. A waiter in the anticipation zone is not eligible for a create slot
// until its adaptive deadline passes; then it competes for the gate, taking
// a returned connection if one comes first. Once it has waited at a full
// gate longer than the adaptive budget it stops taking returned connections
// and waits for a slot only, so that a pool fed by handoffs still grows
// (burst_gate_budget_exhausted).
func (p *Pool[T]) wait(ctx context.Context, w *waiter[T]) (*Conn[T], error) {
	anticipating := !w.createOK
	var deadline <-chan time.Time
	var budget <-chan time.Time
	if anticipating {
		t := time.NewTimer(p.anticipation(ctx))
		defer t.Stop()
		deadline = t.C
	} else {
		t := time.NewTimer(p.gateBudget())
		defer t.Stop()
		budget = t.C
	}
	for {
		select {
		case g := <-w.ch:
			if g.err != nil {
				if w.permit != nil {
					w.permit.Release()
				}
				return nil, g.err
			}
			if g.create {
				if w.fallback {
					p.count(func(c *Counters) { c.CreateFallback++ })
				}
				return p.create(ctx, w.permit, permitJIT)
			}
			if w.permit != nil { // a returned connection came first
				w.permit.Release()
			}
			if anticipating && deadline != nil {
				p.count(func(c *Counters) { c.AnticipationNotify++ })
			}
			return g.conn, nil
		case <-deadline:
			deadline = nil
			p.anticipationOver(w)
			t := time.NewTimer(p.gateBudget())
			defer t.Stop()
			budget = t.C
		case <-budget:
			budget = nil
			p.budgetSpent(w)
		case <-ctx.Done():
			p.abandon(w)
			if w.permit != nil {
				w.permit.Release()
			}
			return nil, ctx.Err()
		}
	}
}

func (p *Pool[T]) count(f func(*Counters)) {
	p.mu.Lock()
	f(&p.counters)
	p.mu.Unlock()
}

// budgetSpent turns a waiter that found the burst gate full for longer than
// the gate budget into a create-only waiter. A waiter held up by the pool
// size rather than the gate keeps taking returned connections.
func (p *Pool[T]) budgetSpent(w *waiter[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.elem == nil || p.total >= p.cfg.MaxSize {
		return // granted already, or the gate is not what it waits for
	}
	p.counters.GateBudgetExhausted++
	w.createOnly = true
}

// anticipationOver makes a waiter whose anticipation deadline passed
// eligible for a create slot.
func (p *Pool[T]) anticipationOver(w *waiter[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.elem == nil {
		return // already granted
	}
	p.counters.AnticipationTimeout++
	w.createOK = true
	w.fallback = true
	p.grantCreatesLocked()
}

// Anticipation bounds: the deadline never exceeds a per-checkout random
// cap in [300, 500) ms, and leaves 500 ms of the caller's own deadline for
// the connect path.
const (
	anticipationCapMin = 300 * time.Millisecond
	anticipationCapMax = 500 * time.Millisecond
	connectReserve     = 500 * time.Millisecond
	gateBudgetMin      = 20 * time.Millisecond
	gateBudgetMax      = 500 * time.Millisecond
)

// anticipation is the adaptive phase-4 deadline: min(remaining wait −
// 500 ms, 2 × transaction p99, random cap 300–500 ms), ±20 % jitter.
func (p *Pool[T]) anticipation(ctx context.Context) time.Duration {
	d := anticipationCapMin + time.Duration((p.jitter()-0.8)/0.4*float64(anticipationCapMax-anticipationCapMin))
	if p99 := p.xactP99(); p99 > 0 && 2*p99 < d {
		d = 2 * p99
	}
	if dl, ok := ctx.Deadline(); ok {
		if rem := dl.Sub(p.now()) - connectReserve; rem < d {
			d = rem
		}
	}
	if d <= 0 {
		return 0
	}
	return time.Duration(float64(d) * p.jitter())
}

// gateBudget is the adaptive burst-gate budget: 2 × transaction p99 ±20 %,
// within [20, 500] ms.
func (p *Pool[T]) gateBudget() time.Duration {
	d := 2 * p.xactP99()
	d = time.Duration(float64(d) * p.jitter())
	return min(max(d, gateBudgetMin), gateBudgetMax)
}

// maxPrereplacements bounds the replacements opened at once per pool; the
// pool may briefly hold MaxSize plus this many connections.
const maxPrereplacements = 3

// maybePrereplaceLocked opens a replacement in the background when a
// connection being checked out has passed 95 % of its lifetime, so its
// closing at the end of this checkout does not leave a hole that the next
// clients would pay for with a connect. Only checkouts trigger it: idle
// connections that expire unused are not replaced, so an idle pool shrinks.
func (p *Pool[T]) maybePrereplaceLocked(c *Conn[T], now time.Time) {
	if c.lifetime <= 0 || c.replaced || now.Sub(c.createdAt) < c.lifetime*95/100 ||
		p.prereplacing >= maxPrereplacements || p.closed || p.paused {
		return
	}
	c.replaced = true
	p.prereplacing++
	p.total++
	p.creating++
	p.counters.Prereplacements++
	go p.prereplace()
}

func (p *Pool[T]) prereplace() {
	c, err := p.create(context.Background(), nil, permitJIT)
	p.mu.Lock()
	p.prereplacing--
	p.mu.Unlock()
	if err == nil {
		p.release(c, false)
	}
}
