package pool

import "time"

// waiter is one queued acquire. Waiters are recycled (Pool.waiterFree):
// one is handed out again only after its wait has ended, its grant (if any)
// has been received and it has left the queue.
type waiter[T Resource] struct {
	ch         chan grant[T] // capacity 1; sent to under Pool.mu only
	since      time.Time
	prev, next *waiter[T] // in Pool.waiters while queued
	queued     bool
	createOK   bool // may be granted a create slot (warm zone, or anticipation over)
	fallback   bool // anticipation timed out before it became eligible
	// createOnly: no longer offered returned connections while the pool has
	// room; it waits for a burst-gate slot only (gate budget spent, or it
	// holds a coordinator permit already).
	createOnly bool
	permit     Permit // taken before queueing for a slot; nil mostly
	// stop is the wait's Bounds.Stop (nil: none): grants pass over a
	// waiter whose stop can be received from (stoppedLocked).
	stop <-chan struct{}

	// The wait's stage and deadline (Pool.wait), under Pool.mu: timer
	// calls Pool.stageTimer at due, the earlier of stageEnd and deadline.
	stage    int
	stageEnd time.Time
	deadline time.Time   // Bounds.Deadline; zero: none
	due      time.Time   // zero: the timer is not meant to fire
	timer    *time.Timer // made on the first wait, Reset per wait

	hedgeTimer *time.Timer // hedgedWait's, made once
}

// newWaiterLocked takes a recycled waiter, or makes one.
func (p *Pool[T]) newWaiterLocked(createOK bool) *waiter[T] {
	w := p.waiterFree
	if w != nil {
		p.waiterFree = w.next
		p.waiterFreeN--
		w.next = nil
	} else {
		w = &waiter[T]{ch: make(chan grant[T], 1)}
	}
	w.since, w.createOK = p.now(), createOK
	return w
}

// freeWaiter recycles w after its wait ended. A pool keeps at most
// maxFreeWaiters, so a burst of waits leaves a bounded list behind.
func (p *Pool[T]) freeWaiter(w *waiter[T]) {
	// A firing that Stop comes too late for finds w no longer queued, or
	// queued again but not due (stageTimer).
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.hedgeTimer != nil {
		w.hedgeTimer.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	timer, hedgeTimer, ch := w.timer, w.hedgeTimer, w.ch
	w.due = time.Time{}
	if p.waiterFreeN >= maxFreeWaiters {
		return
	}
	*w = waiter[T]{ch: ch, timer: timer, hedgeTimer: hedgeTimer, next: p.waiterFree}
	p.waiterFree = w
	p.waiterFreeN++
}

// maxFreeWaiters bounds the recycled waiters of one pool: each is about
// 450 bytes with its channel and timer, and as many are in use at once
// as clients queue, so a pool that once had 256 clients waiting keeps
// about 115 KB for the next such burst.
const maxFreeWaiters = 256

// resetTimer arms *t for d, making it on first use.
func resetTimer(t **time.Timer, d time.Duration) <-chan time.Time {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	return (*t).C
}

// waitQueue is the FIFO of queued waiters, linked through the waiters
// themselves so that queueing allocates nothing.
type waitQueue[T Resource] struct {
	head, tail *waiter[T]
	n          int
}

func (q *waitQueue[T]) Len() int { return q.n }

func (q *waitQueue[T]) front() *waiter[T] { return q.head }

func (q *waitQueue[T]) pushBack(w *waiter[T]) {
	w.prev, w.next, w.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

func (q *waitQueue[T]) pushFront(w *waiter[T]) {
	w.prev, w.next, w.queued = nil, q.head, true
	if q.head != nil {
		q.head.prev = w
	} else {
		q.tail = w
	}
	q.head = w
	q.n++
}

func (q *waitQueue[T]) remove(w *waiter[T]) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	q.n--
}
