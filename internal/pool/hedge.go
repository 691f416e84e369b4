package pool

import (
	"context"
	"time"
)

// A waiter granted a create slot does not wait for its own connect alone.
// Under a load that starves PostgreSQL of CPU a connect can take seconds
// (fork, backend start and authentication each wait for a CPU), while the
// pool's other connections come back every millisecond. A client tied to
// its slow connect would wait out its query_wait_timeout, or fail with the
// connect's timeout, in a pool that serves everyone else. So the connect
// runs in the background (hedgedCreate), and a client whose connect takes
// longer than hedgeAfter waits, first in line, for whichever comes first:
// its connect's result or a connection another client returns. A
// connection that nobody waits for any more goes to the pool like a
// returned one (the next waiter, or idle).
//
// The background connect keeps the client's deadline (query_wait_timeout),
// which bounds server_login_retry's waits and a coordinator permit's wait
// as before, but not the client's stop or context: a client that leaves
// does not cut a connect the pool wanted. A wait without a deadline, and a
// waiter that queued with a coordinator permit in hand (it queued to use
// that permit), keep the plain path (createWithin).

// hedge is one background connect and the client that may still want it.
// Its fields are guarded by Pool.mu.
type hedge[T Resource] struct {
	res       chan hedgeResult[T] // capacity 1: the result, once, if delivered
	abandoned bool                // the client left: the result goes to the pool
	delivered bool                // the result was sent on res
}

type hedgeResult[T Resource] struct {
	conn *Conn[T]
	err  error
}

// hedgeAfter is how long a client waits for its own connect alone before
// it also takes returned connections. A local connect takes milliseconds;
// one that takes longer is the slow case hedging is for. Hedging at once
// would let a client that got a returned connection come back, time its
// anticipation out again and start another connect while its first is
// under way, growing the pool past what its clients use.
const hedgeAfter = 100 * time.Millisecond

// createFor connects in the create slot the caller was granted: hedged
// (hedgedWait) when the wait has a deadline and no coordinator permit is in
// hand, plainly (createWithin) otherwise. Like hedgedWait it may return
// errAcquireAgain.
func (p *Pool[T]) createFor(ctx context.Context, b Bounds, permit Permit) (*Conn[T], error) {
	if dl, ok := p.hedgeDeadline(ctx, b, permit); ok {
		return p.hedgedWait(ctx, b, dl)
	}
	return p.createWithin(ctx, b, permit)
}

// hedgedWait runs the connect of the create slot the caller was granted in
// the background and waits for it; after hedgeAfter it also waits, first
// in line, for a returned connection and takes whichever comes first,
// until ctx is done, b's deadline or b's stop. It returns errAcquireAgain
// when an idle connection is there to take instead.
func (p *Pool[T]) hedgedWait(ctx context.Context, b Bounds, deadline time.Time) (*Conn[T], error) {
	h := &hedge[T]{res: make(chan hedgeResult[T], 1)}
	go p.hedgedCreate(h, deadline)
	p.mu.Lock()
	w := p.newWaiterLocked(false) // not createOK: no second slot comes to it, only connections
	w.stop = b.Stop
	p.mu.Unlock()
	// Its own connect alone first.
	alone := time.Until(deadline) > p.hedgeAfter
	fire := resetTimer(&w.hedgeTimer, min(p.hedgeAfter, time.Until(deadline)))
	var err error
	select {
	case r := <-h.res:
		p.freeWaiter(w)
		return r.conn, r.err
	case <-fire:
		if !alone {
			err = context.DeadlineExceeded
		}
	case <-ctx.Done():
		err = ctx.Err()
	case <-b.Stop:
		err = ErrStopped
	}
	p.mu.Lock()
	if err == nil && len(p.idle) > 0 {
		// One went idle meanwhile (passed over by create-only waiters):
		// take it through a fresh acquire, with an idle connection's checks.
		err = errAcquireAgain
	}
	if err != nil {
		if err != errAcquireAgain { // the wait goes on, as a fresh acquire
			p.counters.WaitCancels++
		}
		p.mu.Unlock()
		p.freeWaiter(w)
		p.abandonHedge(h)
		return nil, err
	}
	p.waiters.pushFront(w)
	p.counters.ConnectsHedged++
	p.mu.Unlock()
	fire = resetTimer(&w.hedgeTimer, time.Until(deadline))
	for {
		select {
		case g := <-w.ch: // a returned connection (no create grant comes to a hedging waiter), or the pool closed
			p.freeWaiter(w)
			p.abandonHedge(h)
			return g.conn, g.err
		case r := <-h.res:
			p.leaveQueue(w)
			p.freeWaiter(w)
			return r.conn, r.err
		case <-fire:
			p.abandonHedge(h)
			return nil, p.giveUp(w, context.DeadlineExceeded)
		case <-ctx.Done():
			p.abandonHedge(h)
			return nil, p.giveUp(w, ctx.Err())
		case <-b.Stop:
			p.abandonHedge(h)
			return nil, p.giveUp(w, ErrStopped)
		}
	}
}

// hedgedCreate is the background connect of a hedge, bounded by the
// client's deadline and the Connector's own connect timeout, not by the
// client's context or stop. Its result goes to the client if it still
// waits, to the pool otherwise.
func (p *Pool[T]) hedgedCreate(h *hedge[T], deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	c, err := p.create(ctx, nil, permitJIT)
	cancel()
	p.mu.Lock()
	if !h.abandoned {
		h.delivered = true
		p.mu.Unlock()
		h.res <- hedgeResult[T]{conn: c, err: err}
		return
	}
	if err == nil {
		p.counters.ConnectsOvertaken++
	}
	p.mu.Unlock()
	if err == nil {
		p.release(c, false, time.Time{})
	}
}

// abandonHedge tells h's connect that its client has left; a result it
// delivered already goes to the pool now.
func (p *Pool[T]) abandonHedge(h *hedge[T]) {
	p.mu.Lock()
	if !h.delivered {
		h.abandoned = true
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	if r := <-h.res; r.err == nil {
		p.count(func(c *Counters) { c.ConnectsOvertaken++ })
		p.release(r.conn, false, time.Time{})
	}
}

// leaveQueue takes a waiter whose wait ended otherwise out of the queue;
// a connection granted to it meanwhile is passed on.
func (p *Pool[T]) leaveQueue(w *waiter[T]) {
	p.mu.Lock()
	if w.queued {
		p.waiters.remove(w)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	if g := <-w.ch; g.conn != nil { // granted under mu before we looked
		p.release(g.conn, false, time.Time{})
	}
}

// hedgeDeadline is the deadline a hedged connect keeps: the earlier of b's
// and ctx's. ok is false when the pool must take the plain path instead:
// no deadline, or a coordinator permit in hand.
func (p *Pool[T]) hedgeDeadline(ctx context.Context, b Bounds, permit Permit) (deadline time.Time, ok bool) {
	if permit != nil {
		return time.Time{}, false
	}
	deadline = b.Deadline
	if dl, has := ctx.Deadline(); has && (deadline.IsZero() || dl.Before(deadline)) {
		deadline = dl
	}
	return deadline, !deadline.IsZero()
}
