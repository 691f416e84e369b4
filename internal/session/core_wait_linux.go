//go:build linux

package session

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// The transaction core's side of the pool: attaching a server (lend),
// the loop's own FIFO per pool for clients that wait, the handoff of a
// released server to the oldest (handOn), the sentinels in the pool's
// queue and the query_wait_timeout timer.

// hold keeps what is left of the read while the client waits in its
// queue. The client is not read meanwhile; its interest stays as it is
// (no epoll_ctl for the common client, which sends nothing more while it
// waits) until it sends more, which turns reading off (clientEvent).
func (c *Core) hold(cl *coreClient, rest []byte) bool {
	if cl.held == nil {
		if n := len(c.heldFree); n > 0 {
			cl.held = c.heldFree[n-1]
			c.heldFree[n-1] = nil
			c.heldFree = c.heldFree[:n-1]
		}
	}
	cl.held = append(cl.held[:0], rest...)
	return false
}

// What a queued client's held bytes may keep for the next: a small
// buffer, a few of them. Without it, every wait in a queue (every
// transaction at 400 clients on a pool of 40) allocated its held bytes.
const (
	heldKeepCap = 2 << 10 // a larger buffer goes to the collector
	heldFreeMax = 128     // at most 256 KiB kept
)

// recycle keeps b, done with (handBack copies what it takes), for hold.
func (c *Core) recycle(b []byte) {
	if b == nil || cap(b) > heldKeepCap || len(c.heldFree) >= heldFreeMax {
		return
	}
	c.heldFree = append(c.heldFree, b[:0])
}

// lendResult is how lend (and acquire) left the client.
type lendResult uint8

const (
	lent    lendResult = iota // attached: its messages go to the server
	queued                    // in its pool's queue in the loop
	ended                     // the session ended
	refused                   // a server the loop cannot read raw: back to a goroutine
	noWait                    // query_wait_timeout 0: the goroutine path's TryCreate
)

// acquire attaches an idle server to cl, or queues it.
func (c *Core) acquire(cl *coreClient) lendResult {
	s := cl.s
	p := s.pool
	s.state.Store(StateWaiting)
	p.Stats.ClientsActive.Add(1)
	if pc := p.Conns().TryAcquireNoProbe(cl.ctx, c.now); pc != nil {
		p.Stats.WaitCount.Add(1)
		return c.lend(cl, pc)
	}
	qwt := p.Settings().General.QueryWaitTimeout
	if qwt == 0 {
		// No waiting at all (an idle server or a connect now): the
		// goroutine path's TryCreate.
		p.Stats.ClientsActive.Add(-1)
		return noWait
	}
	c.enqueue(cl, qwt)
	return queued
}

// coreQueue is a pool's FIFO of the core's clients that wait for a
// server. Servers come to its head from the loop's own releases (handOn)
// and from its sentinels: acquires in the pool's own queue, in a goroutine
// each, which bring what the pool gives the loop's clients otherwise (a
// connect, a server another session released, the end of a pause).
type coreQueue struct {
	clients   []*coreClient
	sentinels []chan struct{} // each one's Stop: the loop ends them when the queue empties (unless the burst gate is full: dequeue)
}

func (c *Core) enqueue(cl *coreClient, qwt time.Duration) {
	s := cl.s
	p := s.pool
	q := c.queue(p)
	if q == nil {
		q = &coreQueue{}
		c.queues[p] = q
	}
	now := c.clock()
	cl.queued, cl.since, cl.deadline = true, now, 0
	if qwt > 0 {
		cl.deadline = now + qwt
		c.armTimer(cl.deadline)
	}
	q.clients = append(q.clients, cl)
	s.mu.Lock()
	s.waiting = true                      // a cancel request now posts postCancel (stopWaitLocked)
	s.xactStart = s.sinceConnected(c.now) // the wait's start until bindServer (RequestTimes)
	s.mu.Unlock()
	p.Stats.ClientsWaiting.Add(1)
	c.ensureSentinels(p, q)
}

// ensureSentinels keeps acquires in the pool's queue while the loop's
// waits: as many as the pool may connect at once, at most one per client.
func (c *Core) ensureSentinels(p *pooler.Pool, q *coreQueue) {
	want := min(len(q.clients), max(1, p.Settings().General.ScalingMaxParallelCreates))
	if len(q.sentinels) > 0 && len(q.sentinels) < want && p.Conns().GateFull() {
		// Another acquire would only wait at the burst gate (and count a
		// wait there) for what the ones in the queue already wait for:
		// the connects in flight, or a server released to the pool.
		return
	}
	for len(q.sentinels) < want {
		stop := make(chan struct{})
		q.sentinels = append(q.sentinels, stop)
		// Bounded by the head's deadline, as the head's own acquire would
		// be: a connect retried under server_login_retry gives up before
		// it, and the head gets the connect error (sentinelBack), not
		// query_wait_timeout.
		b := pool.Bounds{Stop: stop}
		if d := q.clients[0].deadline; d != 0 {
			b.Deadline = c.started.Add(d)
		}
		c.sentinelsRun.Add(1)
		go func() {
			defer c.sentinelsRun.Done()
			pc, _, err := p.Conns().AcquireWaited(context.Background(), b)
			if pc == nil && errors.Is(err, pool.ErrStopped) {
				// The loop stopped it and forgot it (dequeue): nothing
				// to bring, so no wake of the loop for it.
				return
			}
			if !c.post(corePost{kind: postSentinel, p: p, pc: pc, err: err, stop: stop}) && pc != nil {
				p.Release(pc)
			}
		}()
	}
}

// dequeue takes cl out of its queue, its wait over.
func (c *Core) dequeue(cl *coreClient) {
	s := cl.s
	p := s.pool
	q := c.queue(p)
	cl.queued = false
	s.mu.Lock()
	s.waiting = false
	s.mu.Unlock()
	p.Stats.ClientsWaiting.Add(-1)
	wait := c.clock() - cl.since
	p.Stats.WaitTime.Add(uint64(wait.Microseconds()))
	p.Stats.WaitCount.Add(1)
	if q == nil {
		return
	}
	for i, x := range q.clients {
		if x == cl {
			copy(q.clients[i:], q.clients[i+1:])
			q.clients[len(q.clients)-1] = nil
			q.clients = q.clients[:len(q.clients)-1]
			break
		}
	}
	if len(q.clients) == 0 && !p.Conns().GateFull() {
		// Nobody left to serve: the sentinels stop (one that got a
		// server meanwhile brings it back, and it is released). While
		// the pool's connects fill the burst gate they stay: they end
		// when those connects land, and a client that queues meanwhile
		// (soon, on a pool that is growing) is served by them instead of
		// by new acquires, each of which would count a burst-gate wait.
		// A stopped sentinel is forgotten at once: it posts only what it
		// got before the stop (a server, handed on, or a connect's
		// error). Its stop is closed, not sent to, so the pool passes
		// it over at once (pool.Bounds), before its goroutine runs: a
		// server released meanwhile goes to the next waiter or the idle
		// set, not to it and back, and Reuse does not take it for
		// another session's waiter. Each is stopped once: it leaves
		// q.sentinels here.
		for i, stop := range q.sentinels {
			close(stop)
			q.sentinels[i] = nil
		}
		q.sentinels = q.sentinels[:0]
	}
}

// sentinelBack: a sentinel's acquire came back.
func (c *Core) sentinelBack(p corePost) {
	c.sentinelBacks.Add(1)
	q := c.queue(p.p)
	if q != nil {
		for i, stop := range q.sentinels {
			if stop == p.stop {
				q.sentinels = append(q.sentinels[:i], q.sentinels[i+1:]...)
				break
			}
		}
	}
	switch {
	case p.pc != nil:
		c.handOn(p.p, p.pc)
	case errors.Is(p.err, context.DeadlineExceeded):
		// Its head's deadline came: tick tells the head. (A stopped
		// sentinel that got nothing does not post: ensureSentinels.)
	case q != nil && len(q.clients) > 0:
		// The pool could not give one (a failed connect, closed): its
		// head is told, as a client whose own acquire failed.
		head := q.clients[0]
		c.dequeue(head)
		head.s.pool.Stats.ClientsActive.Add(-1)
		_ = head.s.acquireFailed(p.err)
		c.endClient(head, p.err)
	}
	if q != nil && len(q.clients) > 0 {
		c.ensureSentinels(p.p, q)
	}
}

// handOn gives pc, back from a client of p, to the oldest client the loop
// queues for p, or back to the pool.
func (c *Core) handOn(p *pooler.Pool, pc *pooler.Conn) {
	q := c.queue(p)
	if q == nil || len(q.clients) == 0 {
		p.ReleaseAt(pc, c.now)
		return
	}
	if !p.Conns().Reuse(pc, len(q.sentinels)) {
		return // released: to a waiter of the pool's, or closed
	}
	head := q.clients[0]
	c.dequeue(head)
	held := head.held
	head.held = nil
	switch c.lend(head, pc) {
	case lent:
		if c.clientBytes(head, held) {
			c.refresh(head)
		}
	case refused:
		c.handBack(head, held, nil, whyTLSServer)
	}
	c.recycle(held) // clientBytes and handBack keep none of it
}

// canceled: a cancel request for a queued client: its statement is
// answered 57014 by a goroutine (answerCanceled), never sent.
func (c *Core) canceled(cl *coreClient) {
	if cl.gone || !cl.queued {
		return
	}
	s := cl.s
	c.dequeue(cl)
	s.pool.Stats.ClientsActive.Add(-1)
	s.pool.Stats.WaitsCanceled.Add(1)
	held := cl.held
	cl.held = nil
	c.handBack(cl, held, func(s *Session) error { return s.answerCanceledHeld() }, whyCanceled)
	c.recycle(held)
}

// clock is the loop's clock: time since the core started (monotonic), as
// read for the batch.
func (c *Core) clock() time.Duration { return c.now.Sub(c.started) }

// armTimer makes the loop look at its queues by at (on its clock).
func (c *Core) armTimer(at time.Duration) {
	if c.timer != nil && c.timerAt != 0 && at >= c.timerAt {
		return
	}
	c.timerAt = at
	d := at - c.clock()
	if c.timer == nil {
		c.timer = time.AfterFunc(d, func() { c.post(corePost{kind: postTick}) })
		return
	}
	c.timer.Reset(d)
}

// tick ends the waits past query_wait_timeout, as the pool's would.
func (c *Core) tick() {
	c.timerAt = 0
	now := c.clock()
	var next time.Duration
	for _, q := range c.queues {
		for i := 0; i < len(q.clients); {
			cl := q.clients[i]
			if cl.deadline == 0 || now < cl.deadline {
				if cl.deadline != 0 && (next == 0 || cl.deadline < next) {
					next = cl.deadline
				}
				i++
				continue
			}
			s := cl.s
			c.dequeue(cl)
			s.pool.Stats.ClientsActive.Add(-1)
			s.pool.Stats.WaitTimeouts.Add(1)
			_ = s.acquireFailed(pooler.ErrWaitTimeout)
			c.endClient(cl, pooler.ErrWaitTimeout)
		}
	}
	if next != 0 {
		c.armTimer(next)
	}
}

// lend attaches pc to cl: its parameters' SETs go first.
func (c *Core) lend(cl *coreClient, pc *pooler.Conn) lendResult {
	s := cl.s
	conn := pc.Value
	cs := c.serverOf(pc)
	if cs == nil {
		if conn.TLS != "" || conn.Reader.Buffered() > 0 {
			// Not one the loop can read raw: a goroutine runs this
			// transaction, and the pool's sessions stay out of the core
			// once its servers turned out to use TLS.
			if conn.TLS != "" {
				c.tlsPools.Store(s.pool, struct{}{})
			}
			s.pool.Release(pc)
			s.pool.Stats.ClientsActive.Add(-1)
			return refused
		}
		cs = &coreServer{pc: pc, sp: protocol.NewSplitter(0)}
		fd := -1
		_ = rawio.Control(conn.NetConn(), func(f uintptr) { fd = int(f) })
		cs.end = coreEnd{fd: fd, srv: cs}
		c.servers[pc] = cs
	}
	if cs.end.fd < 0 || cs.end.fd >= len(c.ends) || c.ends[cs.end.fd] != &cs.end {
		if !c.register(&cs.end, unix.EPOLLIN|unix.EPOLLRDHUP) {
			delete(c.servers, pc)
			s.pool.Destroy(pc)
			s.pool.Stats.ClientsActive.Add(-1)
			c.failed("register_server")
			c.endClient(cl, errors.New("transaction core: register server"))
			return ended
		}
	}
	s.state.Store(StateActive)
	if cl.hold == nil {
		cl.hold = serverHold(s)
	}
	cs.cl, cl.srv = cl, cs
	if err := s.syncParams(conn, &cs.end.out); err != nil {
		cs.cl, cl.srv = nil, nil
		s.pool.Release(pc)
		s.pool.Stats.ClientsActive.Add(-1)
		c.endClient(cl, err)
		return ended
	}
	s.bindServer(pc, c.now)
	return lent
}

// queue is p's queue in the loop, nil before its first client waited.
// The last one found is kept: most cores serve one pool, and a map look-up
// per transaction was a visible share of the loop's own time
// (docs/benchmarks-passes.md, "Forty-first pass"). Queues are never
// deleted, so the kept one stays valid.
func (c *Core) queue(p *pooler.Pool) *coreQueue {
	if p == c.lastPool {
		return c.lastQueue
	}
	q := c.queues[p]
	if q != nil {
		c.lastPool, c.lastQueue = p, q
	}
	return q
}

// serverOf is pc's state in the loop, nil when the loop has none: found by
// the server's descriptor in the set's table while it is in the set (as a
// pooled server the loop lent before stays), otherwise in servers.
func (c *Core) serverOf(pc *pooler.Conn) *coreServer {
	if fd := pc.Value.Descriptor(); fd >= 0 && fd < len(c.ends) {
		if e := c.ends[fd]; e != nil && e.srv != nil && e.srv.pc == pc {
			return e.srv
		}
	}
	return c.servers[pc]
}
