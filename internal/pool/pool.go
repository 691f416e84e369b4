package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// ErrClosed is returned by Acquire once the pool is closed.
var ErrClosed = errors.New("pool is closed")

// Resource is what the pool manages: anything that can be closed.
type Resource interface {
	Close() error
}

// Connector opens a new connection. It must honour ctx.
type Connector[T Resource] func(ctx context.Context) (T, error)

// Checker probes an idle connection before checkout.
type Checker[T Resource] func(ctx context.Context, v T) error

// Config is the pool's sizing and lifetime policy. Zero durations disable
// the rule they belong to.
type Config struct {
	MaxSize            int
	MinSize            int
	MaxParallelCreates int
	RoundRobin         bool
	IdleTimeout        time.Duration
	Lifetime           time.Duration
	IdleCheckTimeout   time.Duration
	// WarmRatio (percent of MaxSize) is the warm threshold: below it a
	// client that finds no idle connection connects at once; above it, it
	// first spins FastRetries times (for at most SpinBudget) and then
	// waits for a returned connection (anticipation) before it pays for a
	// connect.
	WarmRatio   int
	FastRetries int
}

// Options wires a pool to its environment.
type Options[T Resource] struct {
	Config
	Connect Connector[T]
	Check   Checker[T]
	// Now and Jitter are injectable for tests. Jitter returns a factor in
	// [0.8, 1.2) applied to lifetime and idle timeout of each connection.
	Now    func() time.Time
	Jitter func() float64
	// XactP99 reports the pool's recent transaction p99 (0 = unknown); it
	// sizes the anticipation deadline and the burst-gate budget.
	XactP99 func() time.Duration
	// Permit, when set, is asked for permission before each connect, inside
	// the burst-gate slot (the pool coordinator of max_db_connections). The
	// permit is released when that connection is closed, or at once if the
	// connect fails. A permit that also implements Upgrader is offered an
	// upgrade by Retain while its connection is idle.
	Permit func(ctx context.Context) (Permit, error)
	// TryPermit, when set with Permit, is the coordinator's non-blocking
	// fast path, asked first inside the burst-gate slot. When it fails the
	// pool gives the slot back, waits in Permit, and takes a slot again
	// with the permit in hand, so a caller waiting for an eviction or a
	// neighbour's return does not hold up this pool's other connects.
	// Replenish uses TryPermit alone.
	TryPermit func() (Permit, bool)
	// OnIdleReturn is called after a connection went back to the idle set.
	OnIdleReturn func()
	// Alive is a cheap, non-blocking liveness test of a connection that
	// sat idle for more than aliveCheckAfter; false means it is dead.
	Alive func(v T) bool
}

// aliveCheckAfter: connections reused faster than this skip the Alive test.
const aliveCheckAfter = 5 * time.Millisecond

type grant[T Resource] struct {
	conn   *Conn[T]
	create bool
	again  bool // take the idle connection that waits: acquire again (createOnlyOverLocked)
	err    error
}

// Pool is a FIFO pool of connections with direct handoff. The zero value is
// not usable; use New.
type Pool[T Resource] struct {
	connect Connector[T]
	check   Checker[T]
	now     func() time.Time
	jitter  func() float64
	xactP99 func() time.Duration
	permit  func(ctx context.Context) (Permit, error)
	tryPerm func() (Permit, bool)
	alive   func(T) bool

	onIdleReturn func()

	mu         sync.Mutex
	cfg        Config          // guarded by mu (SetConfig on reload)
	idle       []*Conn[T]      // oldest return first; LRU takes from the end
	waiters    waitQueue[T]    // oldest first
	total      int             // idle + busy + creating
	busy       int             // handed out
	creating   int             // connects in flight
	epoch      uint64          // bumped by Reconnect
	paused     bool            // new acquires wait on resume
	resume     chan struct{}   // closed by Resume
	closed     bool            // Close was called
	counters   Counters        // monotonic event counters
	hedgeAfter time.Duration   // hedge.go's hedgeAfter; tests change it before use
	drained    []chan struct{} // closed when busy+creating reaches zero

	prereplacing int // replacements in flight (at most maxPrereplacements)

	waiterFree  *waiter[T] // recycled waiters, linked through next
	waiterFreeN int
}

// Counters are monotonic event counts of one pool.
type Counters struct {
	Created        uint64 // connects that succeeded
	CreateErrors   uint64 // connects that failed
	Closed         uint64 // connections closed by the pool or destroyed
	Destroyed      uint64 // of Closed: checked-out connections found unusable (Destroy)
	CheckFailures  uint64 // idle checks that failed
	Handoffs       uint64 // releases handed directly to a waiter
	Waits          uint64 // acquires that had to queue
	WaitCancels    uint64 // queued acquires that gave up (timeout, client gone)
	IdleExpired    uint64 // closed by idle_timeout
	LifetimeClosed uint64 // closed by server_lifetime

	// Pool pressure (SHOW POOL_SCALING, pg_doorman_pool_scaling_total).
	CreatesStarted      uint64 // connects begun
	GateWaits           uint64 // acquires that found the burst gate full
	GateBudgetExhausted uint64 // waits at a full gate longer than the adaptive budget (then create-only)
	CreateOnlyExpired   uint64 // create-only waits that got no slot within another budget (then take returned connections again)
	ConnectsHedged      uint64 // connects that outlasted hedgeAfter, so their client took returned connections too
	ConnectsOvertaken   uint64 // connects whose client took a returned connection first (the new one joined the pool)
	PermitWaits         uint64 // connects that gave the gate slot back to wait for a coordinator permit
	FastSpinHits        uint64 // idle connection caught by the anticipation spin
	AnticipationNotify  uint64 // anticipation ended by a returned connection
	AnticipationTimeout uint64 // anticipation deadline passed without one
	CreateFallback      uint64 // connects paid after anticipation timed out
	ReplenishDeferred   uint64 // replenish cycles skipped because the gate was busy
	Evicted             uint64 // idle connections closed for another user by the coordinator
	Prereplacements     uint64 // replacements opened for connections near their lifetime
	PermitUpgrades      uint64 // idle reserve permits moved to the main quota
}

// Stats is a snapshot for the admin console and metrics.
type Stats struct {
	Idle, Busy, Creating, Total, Waiting int
	MaxWait                              time.Duration
	Epoch                                uint64
	Paused                               bool
	Counters
}

// New builds a pool. It opens no connection until asked.
func New[T Resource](o Options[T]) *Pool[T] {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = func() float64 { return 0.8 + 0.4*rand.Float64() }
	}
	if o.XactP99 == nil {
		o.XactP99 = func() time.Duration { return 0 }
	}
	p := &Pool[T]{connect: o.Connect, check: o.Check, now: o.Now, jitter: o.Jitter, xactP99: o.XactP99,
		permit: o.Permit, tryPerm: o.TryPermit, onIdleReturn: o.OnIdleReturn, alive: o.Alive, cfg: normalize(o.Config),
		hedgeAfter: hedgeAfter}
	p.resume = make(chan struct{})
	return p
}

func normalize(c Config) Config {
	if c.MaxSize < 1 {
		c.MaxSize = 1
	}
	if c.MaxParallelCreates < 1 {
		c.MaxParallelCreates = 1
	}
	if c.MinSize > c.MaxSize {
		c.MinSize = c.MaxSize
	}
	return c
}

// SetConfig applies a new policy (reload). Existing connections keep their
// jittered deadlines; a smaller MaxSize takes effect as connections return.
func (p *Pool[T]) SetConfig(c Config) {
	p.mu.Lock()
	p.cfg = normalize(c)
	p.grantCreatesLocked()
	p.mu.Unlock()
}

// Config returns the current policy.
func (p *Pool[T]) Config() Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg
}

// Acquire returns a connection, waiting in FIFO order while the pool is at
// its size or its burst gate is full. It gives up when ctx is done.
func (p *Pool[T]) Acquire(ctx context.Context) (*Conn[T], error) {
	return p.AcquireWithin(ctx, Bounds{})
}

// AcquireWithin is Acquire that also gives up at b's deadline
// (context.DeadlineExceeded) or stop (ErrStopped). A wait that ends with
// a connection handed over allocates nothing.
func (p *Pool[T]) AcquireWithin(ctx context.Context, b Bounds) (*Conn[T], error) {
	c, _, err := p.AcquireWaited(ctx, b)
	return c, err
}

// AcquireWaited is AcquireWithin that also reports whether the caller
// waited: queued for a returned connection, for a connect or for the end
// of a pause. It did not (false) when it took an idle connection, at once
// or within the anticipation spin (at most FastRetries yields and
// SpinBudget).
func (p *Pool[T]) AcquireWaited(ctx context.Context, b Bounds) (c *Conn[T], waited bool, err error) {
	for {
		c, create, w, err := p.tryAcquire(ctx, b)
		if err != nil {
			return nil, waited, err
		}
		if c != nil {
			if c, ok := p.checkoutWithin(ctx, b, c); ok {
				return c, waited, nil
			}
			continue
		}
		waited = true
		if create {
			c, err := p.createFor(ctx, b, nil) // hedge.go
			if errors.Is(err, errAcquireAgain) {
				continue
			}
			return c, true, err
		}
		if w == nil { // paused
			if err := p.waitResume(ctx, b); err != nil {
				return nil, true, err
			}
			continue
		}
		c, err = p.wait(ctx, b, w)
		if errors.Is(err, errAcquireAgain) {
			continue // an idle connection waits (createOnlyOverLocked)
		}
		return c, true, err
	}
}

// TryAcquire returns an idle connection without waiting, or nil when none
// is free or clients are already queued (they come first). It is the hot
// path: no timer, no context allocation.
func (p *Pool[T]) TryAcquire(ctx context.Context) *Conn[T] { return p.tryIdle(ctx, true, time.Time{}) }

// TryAcquireNoProbe is TryAcquire for a caller that must not wait on a
// server (an event loop): when the idle connection it would take has to
// be probed first (IdleCheckTimeout), it leaves it idle and returns nil,
// and an Acquire in a goroutine of the caller's probes it. now is the
// caller's reading of the pool's clock (Options.Now), which an event loop
// takes once per batch of events.
func (p *Pool[T]) TryAcquireNoProbe(ctx context.Context, now time.Time) *Conn[T] {
	return p.tryIdle(ctx, false, now)
}

// tryIdle and release: a zero now reads the pool's clock.
func (p *Pool[T]) tryIdle(ctx context.Context, probe bool, now time.Time) *Conn[T] {
	if now.IsZero() {
		now = p.now()
	}
	for {
		p.mu.Lock()
		if p.closed || p.paused || p.waiters.Len() > 0 {
			p.mu.Unlock()
			return nil
		}
		if !probe && len(p.idle) > 0 && p.needsProbe(p.nextIdleLocked(), now) {
			p.mu.Unlock()
			return nil
		}
		c := p.takeIdleLocked(now)
		p.mu.Unlock()
		if c == nil {
			return nil
		}
		if c, ok := p.checkout(ctx, c, now); ok {
			return c
		}
	}
}

// SpinBudget bounds the anticipation spin by time as FastRetries bounds
// it by count: no new yield starts once it has passed. A yield behind many
// runnable goroutines can take milliseconds, and the spin is meant to cost
// 10-50 us before the client queues for a returned connection.
const SpinBudget = 50 * time.Microsecond

// tryAcquire does the locked part of Acquire: an idle connection, a create
// slot, or a place in the queue (w == nil with no error means paused).
// Below the warm threshold a client that finds nothing idle connects at
// once (if the gate lets it); above it, it first spins FastRetries times
// for a connection about to come back, then queues to anticipate one.
func (p *Pool[T]) tryAcquire(ctx context.Context, b Bounds) (c *Conn[T], create bool, w *waiter[T], err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var start time.Time
	for spin := 0; ; spin++ {
		if p.closed {
			return nil, false, nil, ErrClosed
		}
		if p.paused {
			return nil, false, nil, nil
		}
		now := p.now()
		if c := p.takeIdleLocked(now); c != nil {
			if spin > 0 {
				p.counters.FastSpinHits++
			}
			return c, false, nil, nil
		}
		if spin == 0 {
			start = now
		}
		if p.total < p.warmThresholdLocked() || p.busy == 0 || spin >= p.cfg.FastRetries ||
			p.waiters.Len() > 0 || now.Sub(start) >= SpinBudget {
			break
		}
		p.mu.Unlock()
		runtime.Gosched()
		p.mu.Lock()
	}
	// Nothing checked out means nothing can come back: no point waiting.
	warm := p.total < p.warmThresholdLocked() || p.busy == 0
	if warm && p.total < p.cfg.MaxSize && p.creating < p.cfg.MaxParallelCreates {
		p.total++
		p.creating++
		return nil, true, nil, nil
	}
	if p.creating >= p.cfg.MaxParallelCreates {
		p.counters.GateWaits++
	}
	w = p.newWaiterLocked(warm)
	w.stop = b.Stop
	p.waiters.pushBack(w)
	p.startWaitLocked(ctx, b, w)
	p.counters.Waits++
	return nil, false, w, nil
}

func (p *Pool[T]) warmThresholdLocked() int {
	return p.cfg.MaxSize * p.cfg.WarmRatio / 100
}

// TryCreate is the no-wait path (query_wait_timeout = 0): an idle
// connection or, when the pool has room and the gate a free slot, a new
// one; otherwise ErrNoWait at once.
func (p *Pool[T]) TryCreate(ctx context.Context) (*Conn[T], error) {
	if c := p.TryAcquire(ctx); c != nil {
		return c, nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if p.paused || p.total >= p.cfg.MaxSize || p.creating >= p.cfg.MaxParallelCreates || p.waiters.Len() > 0 {
		p.mu.Unlock()
		return nil, ErrNoWait
	}
	p.total++
	p.creating++
	p.mu.Unlock()
	return p.create(ctx, nil, permitJIT)
}

// ErrNoWait is TryCreate's answer when it would have to wait.
var ErrNoWait = errors.New("no server connection available without waiting")

// needsProbe: c sat idle past IdleCheckTimeout, so checkout probes it.
// Under p.mu (it reads the config).
func (p *Pool[T]) needsProbe(c *Conn[T], now time.Time) bool {
	return p.check != nil && p.cfg.IdleCheckTimeout > 0 && now.Sub(c.returnedAt) >= p.cfg.IdleCheckTimeout
}

// nextIdleLocked is the idle connection takeIdleLocked would pop first.
func (p *Pool[T]) nextIdleLocked() *Conn[T] {
	if p.cfg.RoundRobin {
		return p.idle[0]
	}
	return p.idle[len(p.idle)-1]
}

// takeIdleLocked pops the next idle connection by policy, closing the
// expired ones it meets on the way (outside the lock, in a goroutine-free
// way: Close of a server connection only writes Terminate and closes).
func (p *Pool[T]) takeIdleLocked(now time.Time) *Conn[T] {
	for len(p.idle) > 0 {
		var c *Conn[T]
		if p.cfg.RoundRobin {
			c = p.idle[0]
			copy(p.idle, p.idle[1:])
			p.idle[len(p.idle)-1] = nil
		} else {
			c = p.idle[len(p.idle)-1]
			p.idle[len(p.idle)-1] = nil
		}
		p.idle = p.idle[:len(p.idle)-1]
		if c.epoch != p.epoch || c.lifetimeExceeded(now) {
			p.dropLocked(c)
			go c.closeValue()
			continue
		}
		c.state = stateBusy
		c.probe = p.needsProbe(c, now) // checkout runs unlocked; SetConfig may change cfg
		p.busy++
		p.maybePrereplaceLocked(c, now)
		return c
	}
	return nil
}

// checkout probes a connection that sat idle past IdleCheckTimeout. A failed
// probe means the backend may have restarted: the whole idle set of this
// epoch is suspect, so the pool moves to a new epoch.
func (p *Pool[T]) checkout(ctx context.Context, c *Conn[T], now time.Time) (*Conn[T], bool) {
	idle := now.Sub(c.returnedAt)
	if p.alive != nil && idle > aliveCheckAfter && !p.alive(c.Value) {
		p.mu.Lock()
		p.counters.CheckFailures++
		p.mu.Unlock()
		p.Destroy(c)
		p.Reconnect()
		return nil, false
	}
	if !c.probe {
		return c, true
	}
	if err := p.check(ctx, c.Value); err != nil {
		p.mu.Lock()
		p.counters.CheckFailures++
		p.mu.Unlock()
		p.Destroy(c)
		p.Reconnect()
		return nil, false
	}
	return c, true
}

func (p *Pool[T]) waitResume(ctx context.Context, b Bounds) error {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	var limit <-chan time.Time
	if !b.Deadline.IsZero() {
		t := time.NewTimer(b.Deadline.Sub(p.now()))
		defer t.Stop()
		limit = t.C
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-limit:
		return context.DeadlineExceeded
	case <-b.Stop:
		return ErrStopped
	}
}

// abandon removes a waiter whose context ended. If a grant raced with the
// cancellation, the grant is passed on rather than lost. An error granted
// meanwhile (a deadline or a stop the pool ended the wait with, counted
// there, or the pool closed) leaves nothing to pass on.
func (p *Pool[T]) abandon(w *waiter[T]) {
	p.mu.Lock()
	if w.queued {
		p.counters.WaitCancels++
		p.waiters.remove(w)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	g := <-w.ch // already granted: the send happened under mu
	switch {
	case g.conn != nil:
		p.count(func(c *Counters) { c.WaitCancels++ })
		p.Release(g.conn)
	case g.create:
		p.mu.Lock()
		p.counters.WaitCancels++
		p.total--
		p.creating--
		p.grantCreatesLocked()
		p.mu.Unlock()
	}
}

// create connects inside a burst-gate slot the caller holds (total and
// creating already counted for it). With a coordinator the permit is taken
// just in time, here in the slot; permit is non-nil when the caller got one
// already.
func (p *Pool[T]) create(ctx context.Context, permit Permit, mode permitMode) (*Conn[T], error) {
	if p.permit != nil && permit == nil {
		switch pm, ok := p.tryPermitFast(); {
		case ok:
			permit = pm
		case mode == permitTryOnly:
			return nil, p.createFailed(errNoPermit)
		case p.tryPerm != nil:
			return p.createAfterPermit(ctx)
		default: // no fast path configured: wait in the slot
			pm, err := p.permit(ctx)
			if err != nil {
				return nil, p.createFailed(err) // the coordinator's own error
			}
			permit = pm
		}
	}
	p.count(func(c *Counters) { c.CreatesStarted++ })
	v, err := p.connect(ctx)
	if err != nil {
		if permit != nil {
			permit.Release()
		}
		return nil, p.createFailed(fmt.Errorf("connect: %w", err))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creating--
	p.counters.Created++
	now := p.now()
	c := &Conn[T]{Value: v, pool: p, createdAt: now, returnedAt: now, epoch: p.epoch, state: stateBusy, permit: permit}
	c.lifetime = jittered(p.cfg.Lifetime, p.jitter)
	if lo, ok := any(v).(interface{ MaxLifetime() time.Duration }); ok && lo.MaxLifetime() > 0 {
		c.lifetime = lo.MaxLifetime() // e.g. a Patroni fallback connection
	}
	c.idleTimeout = jittered(p.cfg.IdleTimeout, p.jitter)
	p.busy++
	p.grantCreatesLocked()
	if p.closed {
		p.dropLocked(c)
		go c.closeValue()
		return nil, ErrClosed
	}
	return c, nil
}

// createFailed gives back the caller's slot after a failed create.
func (p *Pool[T]) createFailed(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaveSlotLocked()
	if !errors.Is(err, errNoPermit) {
		p.counters.CreateErrors++
	}
	return err
}

func (p *Pool[T]) leaveSlotLocked() {
	p.creating--
	p.total--
	p.grantCreatesLocked()
	p.signalDrainedLocked()
}

func jittered(d time.Duration, f func() float64) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(float64(d) * f())
}

// grantCreatesLocked hands create slots to the oldest waiters eligible for
// one while the pool has room and the burst gate has free slots.
func (p *Pool[T]) grantCreatesLocked() {
	for w := p.waiters.front(); w != nil && p.total < p.cfg.MaxSize && p.creating < p.cfg.MaxParallelCreates && !p.paused; {
		next := w.next
		if p.stoppedLocked(w) {
			w = next
			continue
		}
		if w.createOK {
			p.waiters.remove(w)
			p.total++
			p.creating++
			w.ch <- grant[T]{create: true}
		}
		w = next
	}
}

// popWaiterLocked takes the oldest waiter that accepts a returned
// connection: while the pool has room, create-only waiters are passed over
// (they get the next burst-gate slot instead).
func (p *Pool[T]) popWaiterLocked() *waiter[T] {
	room := p.total < p.cfg.MaxSize
	for w := p.waiters.front(); w != nil; {
		next := w.next
		if p.stoppedLocked(w) || w.createOnly && room {
			w = next
			continue
		}
		p.waiters.remove(w)
		return w
	}
	return nil
}

// stoppedLocked ends a queued waiter whose Bounds.Stop fired and reports
// whether it did: it leaves the queue with ErrStopped as its grant, so
// that nothing is granted to a wait that is over (a connection would go
// to its goroutine and back to the pool from there, a create slot would
// connect for nobody). A Stop the waiting goroutine received itself is
// not seen here (a send, not a close); its grant then goes back through
// abandon, as before.
func (p *Pool[T]) stoppedLocked(w *waiter[T]) bool {
	if w.stop == nil {
		return false
	}
	select {
	case <-w.stop:
	default:
		return false
	}
	p.waiters.remove(w)
	p.counters.WaitCancels++
	w.ch <- grant[T]{err: ErrStopped}
	return true
}

// Release hands a healthy, clean connection back: to the oldest waiter if
// there is one, otherwise to the idle set. It reports a backlog: a waiter
// got c and more clients still wait.
func (p *Pool[T]) Release(c *Conn[T]) (backlog bool) { return p.release(c, true, time.Time{}) }

// ReleaseAt is Release with the caller's reading of the pool's clock
// (TryAcquireNoProbe); zero reads it.
func (p *Pool[T]) ReleaseAt(c *Conn[T], now time.Time) (backlog bool) { return p.release(c, true, now) }

// Reuse is for a caller that queues clients of its own (an event loop) and
// has c back from one of them: it reports true when c may go straight on
// to the caller's next client, a handoff, and false once it has released c
// as Release does. c goes on only where Release would not close it (the
// pool neither closed nor paused, c of the current epoch and within its
// lifetime, the pool not over its size) and no client waits in the pool's
// own queue but the caller's ours (its acquires in flight there).
func (p *Pool[T]) Reuse(c *Conn[T], ours int) bool {
	p.mu.Lock()
	if c.state != stateBusy || c.pool != p {
		p.mu.Unlock()
		panic("BUG: pool: reuse of a connection that is not checked out")
	}
	now := p.now()
	// Stopped waits at the queue's head are over (the caller's own, which
	// it no longer counts in ours): they leave it first.
	for w := p.waiters.front(); w != nil && p.stoppedLocked(w); w = p.waiters.front() {
	}
	if p.closed || p.paused || c.epoch != p.epoch || c.lifetimeExceeded(now) || p.total > p.cfg.MaxSize || p.waiters.Len() > ours {
		p.mu.Unlock()
		p.release(c, true, now)
		return false
	}
	c.returnedAt = now
	c.used = true
	c.probe = false
	p.counters.Handoffs++
	p.maybePrereplaceLocked(c, now)
	p.mu.Unlock()
	return true
}

func (p *Pool[T]) release(c *Conn[T], served bool, now time.Time) (backlog bool) {
	if now.IsZero() {
		now = p.now()
	}
	p.mu.Lock()
	if c.state != stateBusy || c.pool != p {
		p.mu.Unlock()
		panic("BUG: pool: release of a connection that is not checked out")
	}
	c.returnedAt = now
	c.probe = false
	if served {
		c.used = true
	}
	if p.closed || p.paused || c.epoch != p.epoch || c.lifetimeExceeded(now) || p.total > p.cfg.MaxSize {
		if c.lifetimeExceeded(now) {
			p.counters.LifetimeClosed++
		}
		p.busy--
		p.dropLocked(c)
		p.grantCreatesLocked()
		p.signalDrainedLocked()
		p.mu.Unlock()
		c.closeValue()
		return false
	}
	if w := p.popWaiterLocked(); w != nil {
		p.counters.Handoffs++
		w.ch <- grant[T]{conn: c}
		backlog = p.waiters.Len() > 0
		p.mu.Unlock()
		return backlog
	}
	p.busy--
	c.state = stateIdle
	p.idle = append(p.idle, c)
	p.mu.Unlock()
	if p.onIdleReturn != nil {
		p.onIdleReturn()
	}
	return false
}

// Destroy closes a checked-out connection that must not be reused.
func (p *Pool[T]) Destroy(c *Conn[T]) {
	p.mu.Lock()
	if c.state != stateBusy || c.pool != p {
		p.mu.Unlock()
		panic("BUG: pool: destroy of a connection that is not checked out")
	}
	p.busy--
	p.counters.Destroyed++
	p.dropLocked(c)
	p.grantCreatesLocked()
	p.signalDrainedLocked()
	p.mu.Unlock()
	c.closeValue()
}

func (p *Pool[T]) dropLocked(c *Conn[T]) {
	c.state = stateClosed
	p.total--
	p.counters.Closed++
}

func (p *Pool[T]) signalDrainedLocked() {
	if p.busy+p.creating > 0 {
		return
	}
	for _, ch := range p.drained {
		close(ch)
	}
	p.drained = nil
}
