package pool

import (
	"context"
	"errors"
	"time"
)

// wait blocks a queued acquire until it is handed a connection or a create
// slot. A waiter in the anticipation zone is not eligible for a create slot
// until its adaptive deadline passes; then it competes for the gate, taking
// a returned connection if one comes first. Once it has waited at a full
// gate longer than the adaptive budget it stops taking returned connections
// and waits for a slot only, so that a pool fed by handoffs still grows
// (burst_gate_budget_exhausted). That lasts one more gate budget at most:
// when connects are slow (PostgreSQL starved of CPU) the slots come
// seconds apart, and a waiter that kept passing returned connections over
// would wait out its query_wait_timeout while the pool serves everyone
// behind it. After it the waiter takes returned connections again, first
// in line, and still takes a slot if one comes first (create_only_expired);
// one that finds a connection gone idle meanwhile acquires again. A waiter
// granted a slot connects in the background and takes a returned
// connection if one comes first (hedgedWait).
//
// The stages and b.Deadline are driven by the waiter's timer under the
// pool's lock (startWaitLocked, when w is queued, and stageTimer), not by
// the waiting goroutine: everything that ends or changes a wait arrives on
// w.ch, so the goroutine waits for that channel, ctx and b.Stop only. It
// ends when ctx is done, at b.Deadline or at b.Stop, and recycles w on
// every way out.
func (p *Pool[T]) wait(ctx context.Context, b Bounds, w *waiter[T]) (*Conn[T], error) {
	select {
	case g := <-w.ch:
		permit, fallback, stage := w.permit, w.fallback, w.stage
		p.freeWaiter(w)
		switch {
		case g.again:
			return nil, errAcquireAgain
		case g.err != nil:
			if permit != nil {
				permit.Release()
			}
			return nil, g.err
		case g.create:
			if fallback {
				p.count(func(c *Counters) { c.CreateFallback++ })
			}
			return p.createFor(ctx, b, permit) // hedge.go
		}
		if permit != nil { // a returned connection came first
			permit.Release()
		}
		if stage == stageAnticipation {
			p.count(func(c *Counters) { c.AnticipationNotify++ })
		}
		return g.conn, nil
	case <-ctx.Done():
		return nil, p.giveUp(w, ctx.Err())
	case <-b.Stop:
		return nil, p.giveUp(w, ErrStopped)
	}
}

// A queued waiter's stages (wait).
const (
	stageAnticipation = iota // not eligible for a create slot yet
	stageBudget              // eligible; the gate budget runs
	stageCreateOnly          // budget spent: waits for a slot only
	stageNone                // no stage ends any more (b.Deadline may)
)

// startWaitLocked starts the first stage of a waiter just queued, and its
// timer: anticipation (its deadline leaves room in the earlier of ctx's
// and b's deadlines) unless it may take a create slot at once, otherwise
// the gate budget.
func (p *Pool[T]) startWaitLocked(ctx context.Context, b Bounds, w *waiter[T]) {
	now := time.Now()
	w.deadline = b.Deadline
	if w.createOK {
		w.stage, w.stageEnd = stageBudget, now.Add(p.gateBudget())
	} else {
		deadline := b.Deadline
		if dl, ok := ctx.Deadline(); ok && (deadline.IsZero() || dl.Before(deadline)) {
			deadline = dl
		}
		w.stage, w.stageEnd = stageAnticipation, now.Add(p.anticipation(deadline))
	}
	p.armLocked(w, now)
}

// armLocked sets w's timer for the end of its stage or its deadline,
// whichever comes first (none: the timer stays stopped).
func (p *Pool[T]) armLocked(w *waiter[T], now time.Time) {
	at := w.stageEnd
	if w.stage == stageNone || (!w.deadline.IsZero() && w.deadline.Before(at)) {
		at = w.deadline
	}
	w.due = at
	if at.IsZero() {
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(at.Sub(now), func() { p.stageTimer(w) })
		return
	}
	w.timer.Reset(at.Sub(now))
}

// stageTimer runs when a waiter's timer fires: it ends the wait at its
// deadline or moves it to its next stage, under the pool's lock. A firing
// that comes late, for a wait that has ended (w no longer queued) or one
// re-armed since (recycled for another wait, not due yet), does nothing.
func (p *Pool[T]) stageTimer(w *waiter[T]) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !w.queued || w.due.IsZero() || now.Before(w.due) {
		return
	}
	if !w.deadline.IsZero() && !now.Before(w.deadline) {
		p.waiters.remove(w)
		p.counters.WaitCancels++
		w.ch <- grant[T]{err: context.DeadlineExceeded}
		return
	}
	if w.stage != stageNone && !now.Before(w.stageEnd) {
		switch w.stage {
		case stageAnticipation:
			// The stage first: the slot anticipationOverLocked may grant
			// hands w to its goroutine, which reads w then.
			w.stage, w.stageEnd = stageBudget, now.Add(p.gateBudget())
			p.anticipationOverLocked(w)
		case stageBudget:
			w.stage = stageNone
			if p.budgetSpentLocked(w) {
				w.stage, w.stageEnd = stageCreateOnly, now.Add(p.gateBudget())
			}
		case stageCreateOnly:
			w.stage = stageNone
			if p.createOnlyOverLocked(w) {
				w.ch <- grant[T]{again: true}
				return
			}
		}
	}
	if w.queued { // a create slot may have come with the stage's end
		p.armLocked(w, now)
	}
}

// giveUp leaves the queue for a wait that ended without a grant.
func (p *Pool[T]) giveUp(w *waiter[T], err error) error {
	p.abandon(w)
	if w.permit != nil {
		w.permit.Release()
	}
	p.freeWaiter(w)
	return err
}

func (p *Pool[T]) count(f func(*Counters)) {
	p.mu.Lock()
	f(&p.counters)
	p.mu.Unlock()
}

// budgetSpentLocked turns a waiter that found the burst gate full for longer than
// the gate budget into a create-only waiter, and reports whether it did. A
// waiter held up by the pool size rather than the gate keeps taking
// returned connections.
func (p *Pool[T]) budgetSpentLocked(w *waiter[T]) bool {
	if !w.queued || p.total >= p.cfg.MaxSize {
		return false // granted already, or the gate is not what it waits for
	}
	p.counters.GateBudgetExhausted++
	w.createOnly = true
	return true
}

// errAcquireAgain ends a wait whose waiter left the queue to take an idle
// connection through a fresh acquire (createOnlyOverLocked, hedgedWait).
var errAcquireAgain = errors.New("pool: acquire again")

// createOnlyOverLocked ends a create-only stage that got no slot: the waiter
// takes returned connections again from its place in the queue. A
// connection that went idle meanwhile (it came back while every waiter
// passed it over) is taken through a fresh acquire, with the checks an
// idle connection gets: createOnlyOverLocked then takes the waiter out of the
// queue and reports true. A waiter that holds a coordinator permit stays
// create-only: it queued to use the permit.
func (p *Pool[T]) createOnlyOverLocked(w *waiter[T]) bool {
	if !w.queued || !w.createOnly || w.permit != nil {
		return false // granted already (the grant waits in w.ch), or a permit holder
	}
	w.createOnly = false
	p.counters.CreateOnlyExpired++
	if len(p.idle) == 0 {
		return false
	}
	p.waiters.remove(w)
	return true
}

// anticipationOverLocked makes a waiter whose anticipation deadline passed
// eligible for a create slot.
func (p *Pool[T]) anticipationOverLocked(w *waiter[T]) {
	if !w.queued {
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
func (p *Pool[T]) anticipation(deadline time.Time) time.Duration {
	d := anticipationCapMin + time.Duration((p.jitter()-0.8)/0.4*float64(anticipationCapMax-anticipationCapMin))
	if p99 := p.xactP99(); p99 > 0 && 2*p99 < d {
		d = 2 * p99
	}
	if !deadline.IsZero() {
		if rem := deadline.Sub(p.now()) - connectReserve; rem < d {
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
		p.release(c, false, time.Time{})
	}
}
