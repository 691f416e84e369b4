package coordinator

// score ranks requests for a contended slot, as the reserve arbiter of the
// spec does: starving users (below their effective minimum) first, then the
// user with more queued clients. Arrival order breaks ties.
type score struct {
	starving bool
	queued   int
}

func (u *User) score() score {
	l := u.m.Load()
	return score{starving: l.Total < u.EffectiveMin(), queued: l.Queued}
}

// waiter is one request parked in phase C. ch has room for exactly one
// value: a granted permit, or nil meaning "a neighbour returned an idle
// connection, retry eviction". Whoever removes the waiter from the list
// under mu is the only one who may send.
type waiter struct {
	user *User
	sc   score
	seq  uint64
	ch   chan *Permit
}

// ranksAbove reports whether a should be served before b.
func ranksAbove(a, b *waiter) bool {
	if a.sc.starving != b.sc.starving {
		return a.sc.starving
	}
	if a.sc.queued != b.sc.queued {
		return a.sc.queued > b.sc.queued
	}
	return a.seq < b.seq
}

func (c *Coordinator) addWaiterLocked(w *waiter) {
	c.waiters = append(c.waiters, w)
	c.nWaiting.Store(int64(len(c.waiters)))
}

// removeWaiterLocked reports whether w was still parked.
func (c *Coordinator) removeWaiterLocked(w *waiter) bool {
	for i, x := range c.waiters {
		if x == w {
			last := len(c.waiters) - 1
			c.waiters[i] = c.waiters[last]
			c.waiters[last] = nil
			c.waiters = c.waiters[:last]
			c.nWaiting.Store(int64(len(c.waiters)))
			return true
		}
	}
	return false
}

// popBestLocked removes and returns the best-ranked waiter whose user is
// not skip, or nil.
func (c *Coordinator) popBestLocked(skip *User) *waiter {
	var best *waiter
	for _, w := range c.waiters {
		if w.user == skip {
			continue
		}
		if best == nil || ranksAbove(w, best) {
			best = w
		}
	}
	if best != nil {
		c.removeWaiterLocked(best)
	}
	return best
}

// leave takes w out of the list after a timeout or cancellation. If a
// permit was handed over in the meantime it is returned to the caller.
func (c *Coordinator) leave(w *waiter) *Permit {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.removeWaiterLocked(w) {
		return nil
	}
	return <-w.ch // sent under mu before w left the list: never blocks
}

// NotifyIdleReturn tells the coordinator that this user's pool put a
// connection back into its idle queue. It wakes the best-ranked waiter of
// another user so that it retries eviction: the returning pool may just
// have become a donor. Waiters of the same pool are served by the pool's
// own direct handoff. Cheap when nobody waits (two atomic operations).
func (u *User) NotifyIdleReturn() {
	c := u.c
	c.idleGen.Add(1)
	if c.nWaiting.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.popBestLocked(u); w != nil {
		w.ch <- nil
	}
}
