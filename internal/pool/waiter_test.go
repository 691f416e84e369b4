package pool

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A full pool: the wait ends at Bounds.Deadline and leaves the queue.
func TestAcquireWithinDeadline(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1}, cn, time.Hour)
	held, err := p.Acquire(context.Background())
	require.NoError(t, err)
	start := time.Now()
	_, err = p.AcquireWithin(context.Background(), Bounds{Deadline: start.Add(30 * time.Millisecond)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	s := p.Stats()
	require.Zero(t, s.Waiting)
	require.EqualValues(t, 1, s.WaitCancels)
	p.Release(held)
	c, err := p.Acquire(context.Background())
	require.NoError(t, err, "the abandoned wait took nothing with it")
	require.Same(t, held, c)
	p.Release(c)
}

// A receive from Bounds.Stop ends a queued wait with ErrStopped.
func TestAcquireWithinStop(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1}, cn, time.Hour)
	held, err := p.Acquire(context.Background())
	require.NoError(t, err)
	stop := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := p.AcquireWithin(context.Background(), Bounds{Deadline: time.Now().Add(time.Minute), Stop: stop})
		errc <- err
	}()
	waitFor(t, func() bool { return p.Stats().Waiting == 1 })
	stop <- struct{}{}
	require.ErrorIs(t, <-errc, ErrStopped)
	require.Zero(t, p.Stats().Waiting)
	p.Release(held)
}

// Stop also ends a connect the wait was granted, and is reported as
// ErrStopped, not as the connect's own context error.
func TestAcquireWithinStopDuringConnect(t *testing.T) {
	cn := &connector{gate: make(chan struct{})}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
	stop := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := p.AcquireWithin(context.Background(), Bounds{Stop: stop})
		errc <- err
	}()
	waitFor(t, func() bool { return p.Stats().Creating == 1 })
	stop <- struct{}{}
	require.ErrorIs(t, <-errc, ErrStopped)
	waitFor(t, func() bool { s := p.Stats(); return s.Creating == 0 && s.Total == 0 })
}

// A deadline that passes during a granted connect ends the wait with
// context.DeadlineExceeded, and the connect, which keeps that deadline,
// with it.
func TestAcquireWithinDeadlineDuringConnect(t *testing.T) {
	cn := &connector{gate: make(chan struct{})}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
	_, err := p.AcquireWithin(context.Background(), Bounds{Deadline: time.Now().Add(20 * time.Millisecond)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	waitFor(t, func() bool { s := p.Stats(); return s.Total == 0 && s.Creating == 0 })
}

// A wait that ends with a handed-over connection allocates nothing once the
// pool has a recycled waiter: no context, timer, channel or queue element
// per wait (a pool at its size waits on every transaction).
func TestHandoffWaitAllocatesNothing(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1}, cn, time.Hour)
	held, err := p.Acquire(context.Background())
	require.NoError(t, err)
	give := make(chan *Conn[*fakeConn])
	done := make(chan struct{})
	defer close(done)
	go func() { // releases what it is given once the next acquire queued
		for {
			select {
			case c := <-give:
				for p.Stats().Waiting == 0 {
					time.Sleep(10 * time.Microsecond)
				}
				p.Release(c)
			case <-done:
				return
			}
		}
	}()
	stop := make(chan struct{}, 1)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		give <- held
		c, err := p.AcquireWithin(ctx, Bounds{Deadline: time.Now().Add(time.Minute), Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		held = c
	})
	require.Zero(t, allocs)
	require.Positive(t, p.Stats().Handoffs)
	p.Release(held)
}

func TestWaitQueueOrder(t *testing.T) {
	var q waitQueue[*fakeConn]
	a, b, c := &waiter[*fakeConn]{}, &waiter[*fakeConn]{}, &waiter[*fakeConn]{}
	q.pushBack(b)
	q.pushBack(c)
	q.pushFront(a)
	require.Equal(t, 3, q.Len())
	var got []*waiter[*fakeConn]
	for w := q.front(); w != nil; w = w.next {
		got = append(got, w)
	}
	require.Equal(t, []*waiter[*fakeConn]{a, b, c}, got)
	q.remove(b)
	require.False(t, b.queued)
	require.Same(t, c, a.next)
	require.Same(t, a, c.prev)
	q.remove(a)
	q.remove(c)
	require.Zero(t, q.Len())
	require.Nil(t, q.front())
	require.Nil(t, q.tail)
}

// AcquireWaited says whether the caller waited: not for an idle
// connection, yes when it was queued until another came back, and yes
// for a connect.
func TestAcquireWaited(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1}, cn, time.Hour)
	ctx := context.Background()
	c, waited, err := p.AcquireWaited(ctx, Bounds{})
	require.NoError(t, err)
	require.True(t, waited, "the first connection was connected for the caller")
	p.Release(c)
	c, waited, err = p.AcquireWaited(ctx, Bounds{})
	require.NoError(t, err)
	require.False(t, waited, "an idle connection is no wait")
	type result struct {
		c      *Conn[*fakeConn]
		waited bool
		err    error
	}
	got := make(chan result, 1)
	go func() {
		c, waited, err := p.AcquireWaited(ctx, Bounds{Deadline: time.Now().Add(time.Minute)})
		got <- result{c, waited, err}
	}()
	require.Eventually(t, func() bool { return p.Stats().Waiting == 1 }, 5*time.Second, time.Millisecond)
	p.Release(c)
	r := <-got
	require.NoError(t, r.err)
	require.True(t, r.waited, "a hand-off after queueing is a wait")
	require.Same(t, c, r.c)
	p.Release(r.c)
}

// A waiter's timer that fires late does nothing to a wait that ended (the
// waiter left the queue) or to the next wait of the recycled waiter before
// that wait is due; a due one moves the stage on.
func TestStageTimerFiresLate(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
	held, err := p.Acquire(context.Background()) // full: a stage's end grants no slot
	require.NoError(t, err)
	defer p.Release(held)
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	for _, tt := range []struct {
		name      string
		queued    bool
		due       time.Time
		wantStage int
	}{
		{"the wait ended", false, past, stageAnticipation},
		{"recycled, not armed yet", true, time.Time{}, stageAnticipation},
		{"recycled, due later", true, future, stageAnticipation},
		{"due", true, past, stageBudget},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p.mu.Lock()
			w := p.newWaiterLocked(false)
			if tt.queued {
				p.waiters.pushBack(w)
			}
			w.stage, w.stageEnd, w.due = stageAnticipation, past, tt.due
			p.mu.Unlock()
			p.stageTimer(w)
			p.mu.Lock()
			stage := w.stage
			if w.queued {
				p.waiters.remove(w)
			}
			p.mu.Unlock()
			require.Equal(t, tt.wantStage, stage)
			require.Empty(t, w.ch, "no grant for a firing that does nothing")
			p.freeWaiter(w)
		})
	}
}

// A queued waiter whose Stop is closed is passed over by the grants and
// ended with ErrStopped, before its goroutine runs: a returned connection
// goes to the next waiter or the idle set, not to the stopped wait and
// back, and no create slot is spent on it. The waiters are queued by hand
// (no goroutine), so the grants alone decide what each receives.
func TestGrantsPassOverAStoppedWaiter(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	open := make(chan struct{})
	cases := []struct {
		name    string
		stops   []chan struct{} // one waiter each, oldest first
		destroy bool            // the held connection is destroyed (a create slot), not released
		want    []string        // what each waiter is granted: "stopped", "conn", "create", "none"
	}{
		{"stopped alone: the connection goes idle", []chan struct{}{closed}, false, []string{"stopped"}},
		{"stopped, then a live waiter: the live one gets it", []chan struct{}{closed, open}, false, []string{"stopped", "conn"}},
		{"a stop not fired is granted as before", []chan struct{}{open, closed}, false, []string{"conn", "none"}},
		{"no stop at all: granted as before", []chan struct{}{nil}, false, []string{"conn"}},
		{"a create slot skips the stopped waiter", []chan struct{}{closed, open}, true, []string{"stopped", "create"}},
		{"a create slot for nobody is not spent", []chan struct{}{closed}, true, []string{"stopped"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cn := &connector{}
			p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1}, cn, time.Hour)
			held, err := p.Acquire(context.Background())
			require.NoError(t, err)
			ws := make([]*waiter[*fakeConn], len(c.stops))
			p.mu.Lock()
			for i, stop := range c.stops {
				w := p.newWaiterLocked(true)
				w.stop = stop
				p.waiters.pushBack(w)
				ws[i] = w
			}
			p.mu.Unlock()
			before := p.Stats().WaitCancels
			if c.destroy {
				p.Destroy(held)
			} else {
				p.Release(held)
			}
			var (
				got     []string
				conns   []*Conn[*fakeConn]
				stopped int
			)
			for _, w := range ws {
				select {
				case g := <-w.ch:
					switch {
					case g.err != nil:
						require.ErrorIs(t, g.err, ErrStopped)
						got = append(got, "stopped")
						stopped++
					case g.conn != nil:
						got = append(got, "conn")
						conns = append(conns, g.conn)
					case g.create:
						got = append(got, "create")
						p.mu.Lock()
						p.leaveSlotLocked() // the slot's connect is not the test's
						p.mu.Unlock()
					}
				default:
					got = append(got, "none") // still queued
					p.mu.Lock()
					p.waiters.remove(w)
					p.mu.Unlock()
				}
			}
			require.Equal(t, c.want, got)
			require.EqualValues(t, stopped, p.Stats().WaitCancels-before, "each stopped wait counts once")
			for _, conn := range conns {
				p.Release(conn)
			}
			s := p.Stats()
			require.Zero(t, s.Waiting)
			require.Zero(t, s.Creating)
			if c.destroy {
				require.Zero(t, s.Total, "no connection made for a stopped wait")
			} else {
				require.Equal(t, 1, s.Idle, "the connection ends idle")
			}
		})
	}
}
