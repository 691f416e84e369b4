package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// acquireBounded is an acquire with a deadline, as pg_doorman's sessions
// make (query_wait_timeout): the path whose connects are hedged.
func acquireBounded(p *Pool[*fakeConn]) (*Conn[*fakeConn], error) {
	return p.AcquireWithin(context.Background(), Bounds{Deadline: time.Now().Add(time.Minute)})
}

// acquireBoundedAsync runs acquireBounded in a goroutine of its own; the
// channel receives what it got (nil after an error, which fails t).
func acquireBoundedAsync(t *testing.T, p *Pool[*fakeConn]) <-chan *Conn[*fakeConn] {
	got := make(chan *Conn[*fakeConn], 1)
	go func() {
		c, err := acquireBounded(p)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	return got
}

// holdConnects makes cn's connects wait until the returned channel is
// closed.
func holdConnects(cn *connector) chan struct{} {
	gate := make(chan struct{})
	cn.mu.Lock()
	cn.gate = gate
	cn.mu.Unlock()
	return gate
}

// A waiter at a full burst gate takes a connection returned before its gate
// budget is spent (direct handoff has priority). The client whose connect
// holds the slot is first in line for returns (hedgedWait), so two come
// back: the first to it, the second to the waiter at the gate.
func TestGateWaiterTakesReturnWithinBudget(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 4, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour) // budget 500 ms
	c0, err := p.Acquire(context.Background())
	require.NoError(t, err)
	c1, err := p.Acquire(context.Background())
	require.NoError(t, err)
	gate := holdConnects(cn)
	gotB := acquireBoundedAsync(t, p) // B: connects, held at the connector
	waitFor(t, func() bool { s := p.Stats(); return s.Creating == 1 && s.Waiting == 1 })
	got := acquireBoundedAsync(t, p) // C: finds the gate full
	waitFor(t, func() bool { return p.Stats().Waiting == 2 })
	p.Release(c1)
	require.Same(t, c1, <-gotB, "the client whose connect is slow takes the first return")
	p.Release(c0)
	c := <-got
	require.Same(t, c0, c)
	require.Zero(t, p.Stats().GateBudgetExhausted)
	p.Release(c)
	p.Release(c1)
	close(gate) // B's connect ends: the new connection joins the pool
	waitFor(t, func() bool { s := p.Stats(); return s.ConnectsOvertaken == 1 && s.Idle == 3 })
}

// gateSetup is a pool of 4 with a burst gate of 1 (p99 as given: the gate
// budget is twice it, within [20, 500] ms) whose only slot is taken by
// client B's connect, held at the connector until gate is closed. Two
// connections are checked out: c0 and c1. B waits first in line for a
// returned connection meanwhile (hedgedWait); got receives what client C,
// queued at the full gate behind B, is given once its budget is spent.
type gateSetup struct {
	p      *Pool[*fakeConn]
	c0, c1 *Conn[*fakeConn]
	gate   chan struct{}
	got    <-chan *Conn[*fakeConn]
}

func newGateSetup(t *testing.T, p99 time.Duration) *gateSetup {
	t.Helper()
	cn := &connector{}
	g := &gateSetup{}
	g.p = pressurePool(t, Config{MaxSize: 4, MaxParallelCreates: 1, WarmRatio: 100}, cn, p99)
	var err error
	g.c0, err = g.p.Acquire(context.Background())
	require.NoError(t, err)
	g.c1, err = g.p.Acquire(context.Background())
	require.NoError(t, err)
	g.gate = holdConnects(cn)
	gotB := acquireBoundedAsync(t, g.p)
	waitFor(t, func() bool { s := g.p.Stats(); return s.Creating == 1 && s.Waiting == 1 })
	g.got = acquireBoundedAsync(t, g.p)
	waitFor(t, func() bool { return g.p.Stats().GateBudgetExhausted == 1 })
	g.p.Release(g.c1)
	require.Same(t, g.c1, <-gotB, "B takes the first return")
	return g
}

// Once the gate budget is spent (p99 250 ms: budget 500 ms) the waiter
// stops taking returned connections and gets the next gate slot, so the
// pool grows instead of living on handoffs at its warm threshold. (Its
// create-only phase lasts another budget: TestCreateOnlyExpires.)
func TestGateBudgetSpentWaiterCreates(t *testing.T) {
	g := newGateSetup(t, 250*time.Millisecond)
	p := g.p
	p.Release(g.c0)
	s := p.Stats()
	require.Equal(t, 1, s.Idle, "the returned connection is not handed to a create-only waiter")
	require.Equal(t, 1, s.Waiting)
	close(g.gate) // B's connect ends and joins the pool; its slot goes to C, which connects
	c := <-g.got
	waitFor(t, func() bool { s := p.Stats(); return s.Created == 4 && s.Creating == 0 })
	s = p.Stats()
	require.Equal(t, 4, s.Total, "the pool grew by C's connect")
	require.Zero(t, s.CreateOnlyExpired)
	p.Release(c)
	p.Release(g.c1)
}

// A create-only waiter that gets no slot within another budget (the
// connect in the slot is slow, as when PostgreSQL is starved of CPU) takes
// the connection that went idle while it passed it over, instead of
// waiting out its query_wait_timeout while the pool serves others.
func TestCreateOnlyExpires(t *testing.T) {
	g := newGateSetup(t, time.Millisecond) // budget 20 ms
	p := g.p
	p.Release(g.c0) // passed over, or handed over if the create-only phase is over already
	c := <-g.got
	require.Same(t, g.c0, c)
	s := p.Stats()
	require.EqualValues(t, 1, s.CreateOnlyExpired)
	require.Equal(t, 1, s.Creating, "B's connect still holds the slot")
	require.Zero(t, s.Waiting)
	p.Release(c)
	p.Release(g.c1)
	close(g.gate)
	waitFor(t, func() bool { s := p.Stats(); return s.Total == 3 && s.Idle == 3 })
}

// Once its create-only phase is over, a waiter with nothing idle to take
// stays first in line and gets the next returned connection.
func TestCreateOnlyExpiredTakesNextReturn(t *testing.T) {
	g := newGateSetup(t, time.Millisecond)
	p := g.p
	waitFor(t, func() bool { return p.Stats().CreateOnlyExpired == 1 })
	require.Equal(t, 1, p.Stats().Waiting, "still queued")
	handoffs := p.Stats().Handoffs
	p.Release(g.c0)
	c := <-g.got
	require.Same(t, g.c0, c)
	require.Equal(t, handoffs+1, p.Stats().Handoffs)
	p.Release(c)
	p.Release(g.c1)
	close(g.gate)
}

// A client whose connect is slow takes a connection another client
// returns first; the connect's result joins the pool when it comes.
func TestSlowConnectOvertakenByReturn(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 2, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
	c1, err := p.Acquire(context.Background())
	require.NoError(t, err)
	gate := holdConnects(cn)
	got := acquireBoundedAsync(t, p)
	waitFor(t, func() bool { s := p.Stats(); return s.Creating == 1 && s.Waiting == 1 })
	p.Release(c1)
	c := <-got
	require.Same(t, c1, c)
	require.EqualValues(t, 1, p.Stats().ConnectsHedged)
	require.Zero(t, p.Stats().ConnectsOvertaken, "the connect is still under way")
	close(gate)
	waitFor(t, func() bool { s := p.Stats(); return s.ConnectsOvertaken == 1 && s.Idle == 1 && s.Total == 2 })
	p.Release(c)
}

// A client gets its own connect's connection when no return comes first;
// one whose wait ends first (its deadline) leaves it to the pool.
func TestHedgedConnectOutcomes(t *testing.T) {
	t.Run("own connect first", func(t *testing.T) {
		cn := &connector{}
		p := pressurePool(t, Config{MaxSize: 2, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
		c1, err := p.Acquire(context.Background())
		require.NoError(t, err)
		c2, err := acquireBounded(p)
		require.NoError(t, err)
		require.NotSame(t, c1, c2)
		require.Equal(t, 2, c2.Value.id)
		require.Zero(t, p.Stats().ConnectsHedged, "a connect within hedgeAfter is its client's alone")
		require.Zero(t, p.Stats().ConnectsOvertaken)
		require.Zero(t, p.Stats().Waiting)
		p.Release(c1)
		p.Release(c2)
	})
	t.Run("deadline ends wait and connect", func(t *testing.T) {
		cn := &connector{}
		p := pressurePool(t, Config{MaxSize: 2, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
		c1, err := p.Acquire(context.Background())
		require.NoError(t, err)
		gate := holdConnects(cn)
		_, err = p.AcquireWithin(context.Background(), Bounds{Deadline: time.Now().Add(20 * time.Millisecond)})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Zero(t, p.Stats().Waiting)
		// The connect keeps the client's deadline (it bounds server_login_retry).
		waitFor(t, func() bool { s := p.Stats(); return s.Creating == 0 && s.Total == 1 })
		require.Zero(t, p.Stats().ConnectsOvertaken)
		close(gate)
		p.Release(c1)
	})
	t.Run("return within hedgeAfter", func(t *testing.T) {
		// A connection returned while the client's connect is young
		// goes to the pool, not to the client: the connect is its own.
		cn := &connector{}
		p := pressurePool(t, Config{MaxSize: 2, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
		p.hedgeAfter = time.Hour // however slow this machine is
		c1, err := p.Acquire(context.Background())
		require.NoError(t, err)
		gate := holdConnects(cn)
		got := acquireBoundedAsync(t, p)
		waitFor(t, func() bool { return p.Stats().Creating == 1 })
		p.Release(c1)
		require.Equal(t, 1, p.Stats().Idle)
		close(gate)
		c := <-got
		require.NotSame(t, c1, c)
		p.Release(c)
	})
	t.Run("connect fails", func(t *testing.T) {
		cn := &connector{}
		p := pressurePool(t, Config{MaxSize: 2, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Hour)
		c1, err := p.Acquire(context.Background())
		require.NoError(t, err)
		cn.fail.Store(true)
		_, err = acquireBounded(p)
		require.ErrorContains(t, err, "refused")
		s := p.Stats()
		require.Zero(t, s.Waiting)
		require.Equal(t, 1, s.Total)
		p.Release(c1)
	})
}

// A waiter held up by the pool size, not the gate, keeps taking returned
// connections after its budget: no slot could ever come for it.
func TestGateBudgetIgnoredAtPoolSize(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 1, MaxParallelCreates: 1, WarmRatio: 100}, cn, time.Millisecond)
	c1, err := p.Acquire(context.Background())
	require.NoError(t, err)
	p.mu.Lock()
	w := p.newWaiterLocked(true)
	p.waiters.pushBack(w)
	require.False(t, p.budgetSpentLocked(w))
	p.mu.Unlock()
	require.False(t, w.createOnly)
	require.Zero(t, p.Stats().GateBudgetExhausted)
	p.Release(c1)
	g := <-w.ch
	require.Same(t, c1, g.conn)
	p.Release(g.conn)
}

type fakePermit struct{ released atomic.Int32 }

func (f *fakePermit) Release() { f.released.Add(1) }

// permitSource is a controllable coordinator: TryPermit succeeds while
// free is set; Permit blocks until the test sends a permit.
type permitSource struct {
	free  atomic.Bool
	tries atomic.Int32
	waits atomic.Int32
	grant chan *fakePermit
}

func (s *permitSource) try() (Permit, bool) {
	s.tries.Add(1)
	if s.free.Load() {
		return &fakePermit{}, true
	}
	return nil, false
}

func (s *permitSource) wait(ctx context.Context) (Permit, error) {
	s.waits.Add(1)
	select {
	case pm := <-s.grant:
		return pm, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func permitPool(t *testing.T, cfg Config, cn *connector, ps *permitSource) *Pool[*fakeConn] {
	t.Helper()
	p := New(Options[*fakeConn]{Config: cfg, Connect: cn.connect, Jitter: func() float64 { return 1 },
		XactP99: func() time.Duration { return time.Hour }, Permit: ps.wait, TryPermit: ps.try})
	t.Cleanup(p.Close)
	return p
}

// A connect that must wait for a coordinator permit gives its burst-gate
// slot back meanwhile: another client of the same pool connects at once
// (no head-of-line blocking); the first one then connects with its permit.
func TestPermitWaitFreesGateSlot(t *testing.T) {
	cn := &connector{}
	ps := &permitSource{grant: make(chan *fakePermit)}
	p := permitPool(t, Config{MaxSize: 4, MaxParallelCreates: 1, WarmRatio: 100}, cn, ps)
	got := make(chan *Conn[*fakeConn], 1)
	go func() {
		c, err := p.Acquire(context.Background())
		require.NoError(t, err)
		got <- c
	}()
	waitFor(t, func() bool { s := p.Stats(); return s.PermitWaits == 1 && s.Creating == 0 })
	require.EqualValues(t, 1, ps.waits.Load())

	ps.free.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := p.Acquire(ctx) // would wait behind the slot holder without the slow path
	require.NoError(t, err)
	require.NotNil(t, b.permit)

	pm := &fakePermit{}
	ps.grant <- pm
	a := <-got
	require.Same(t, pm, a.permit.(*fakePermit), "connected with the permit it waited for")
	s := p.Stats()
	require.EqualValues(t, 2, s.CreatesStarted)
	require.EqualValues(t, 2, s.Created)
	require.EqualValues(t, 1, s.PermitWaits)
	p.Destroy(a)
	require.EqualValues(t, 1, pm.released.Load(), "closing the connection releases its permit")
	p.Release(b)
}

// A permit waiter that re-enters a full gate takes a returned connection
// when the pool is full, and gives its permit back.
func TestPermitWaiterTakesReturnAtPoolSize(t *testing.T) {
	cn := &connector{}
	ps := &permitSource{grant: make(chan *fakePermit)}
	ps.free.Store(true)
	p := permitPool(t, Config{MaxSize: 1, MaxParallelCreates: 1, WarmRatio: 100}, cn, ps)
	held, err := p.Acquire(context.Background())
	require.NoError(t, err)
	// Queue the slow path by hand: its permit arrived while the pool is full.
	pm := &fakePermit{}
	p.mu.Lock()
	w := p.newWaiterLocked(true)
	w.createOnly, w.permit = true, pm
	p.waiters.pushFront(w)
	p.startWaitLocked(context.Background(), Bounds{}, w)
	p.mu.Unlock()
	got := make(chan *Conn[*fakeConn], 1)
	go func() {
		c, err := p.wait(context.Background(), Bounds{}, w)
		require.NoError(t, err)
		got <- c
	}()
	p.Release(held)
	c := <-got
	require.Same(t, held, c)
	require.EqualValues(t, 1, pm.released.Load())
	p.Release(c)
}

// Replenish takes only free permits: at the database limit it defers
// instead of waiting, evicting or taking the reserve.
func TestReplenishTakesOnlyFreePermits(t *testing.T) {
	cn := &connector{}
	ps := &permitSource{grant: make(chan *fakePermit)}
	p := permitPool(t, Config{MaxSize: 4, MinSize: 2, MaxParallelCreates: 2}, cn, ps)
	created, deferred, err := p.Replenish(context.Background())
	require.NoError(t, err)
	require.True(t, deferred)
	require.Zero(t, created)
	require.Zero(t, ps.waits.Load())
	s := p.Stats()
	require.EqualValues(t, 1, s.ReplenishDeferred)
	require.Zero(t, s.CreateErrors)
	require.Zero(t, s.Total)
	ps.free.Store(true)
	created, deferred, err = p.Replenish(context.Background())
	require.NoError(t, err)
	require.False(t, deferred)
	require.Equal(t, 2, created)
}

// The anticipation spin catches a connection returned while it spins: the
// acquire is not queued and fast_spin_hits counts it. The injected clock
// shows when the spin is under way (it is read on every round).
func TestAnticipationSpinCatchesReturn(t *testing.T) {
	cn := &connector{}
	var reads atomic.Int64
	p := New(Options[*fakeConn]{Config: Config{MaxSize: 4, MaxParallelCreates: 2, WarmRatio: 10, FastRetries: 1 << 30},
		Connect: cn.connect, Jitter: func() float64 { return 1 }, XactP99: func() time.Duration { return time.Hour },
		Now: func() time.Time { reads.Add(1); return time.Unix(1000, 0) }}) // frozen: the spin's budget never runs out
	t.Cleanup(p.Close)
	held, err := p.Acquire(context.Background())
	require.NoError(t, err)
	got := make(chan *Conn[*fakeConn], 1)
	start := reads.Load()
	go func() {
		c, err := p.Acquire(context.Background())
		require.NoError(t, err)
		got <- c
	}()
	waitFor(t, func() bool { return reads.Load() > start+3 }) // spinning
	p.Release(held)
	c := <-got
	require.Same(t, held, c)
	s := p.Stats()
	require.EqualValues(t, 1, s.FastSpinHits)
	require.Zero(t, s.Waits, "caught by the spin, never queued")
	p.Release(c)
}

// The spin is bounded by time too: with retries to spare, a clock that
// passes SpinBudget sends the client to the queue, where the returned
// connection is handed to it.
func TestAnticipationSpinStopsAtItsBudget(t *testing.T) {
	cases := []struct {
		name      string
		step      time.Duration // the clock's advance per reading
		wantReads int64         // the spin's readings and Acquire's own two, at most
	}{
		{"a reading per budget", SpinBudget, 4},
		{"ten readings per budget", SpinBudget / 10, 13},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			now := time.Unix(1000, 0)
			var reads atomic.Int64
			cn := &connector{}
			p := New(Options[*fakeConn]{Config: Config{MaxSize: 4, MaxParallelCreates: 2, WarmRatio: 10, FastRetries: 1 << 30},
				Connect: cn.connect, Jitter: func() float64 { return 1 }, XactP99: func() time.Duration { return time.Hour },
				Now: func() time.Time {
					reads.Add(1)
					mu.Lock()
					defer mu.Unlock()
					now = now.Add(tc.step)
					return now
				}})
			t.Cleanup(p.Close)
			held, err := p.Acquire(context.Background())
			require.NoError(t, err)
			start := reads.Load()
			type result struct {
				c   *Conn[*fakeConn]
				err error
			}
			got := make(chan result, 1)
			go func() {
				c, err := p.Acquire(context.Background())
				got <- result{c, err}
			}()
			waitFor(t, func() bool { return p.Stats().Waits == 1 })
			spun := reads.Load() - start
			p.Release(held)
			r := <-got
			require.NoError(t, r.err)
			require.LessOrEqual(t, spun, tc.wantReads, "readings before queueing")
			c := r.c
			require.Same(t, held, c, "handed to the queued client")
			require.Zero(t, p.Stats().FastSpinHits)
			p.Release(c)
		})
	}
}

// EvictIdle closes the oldest idle connection past min age, never going to
// the floor, and counts it; its permit is returned.
func TestEvictIdle(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	cn := &connector{}
	ps := &permitSource{grant: make(chan *fakePermit)}
	ps.free.Store(true)
	p := New(Options[*fakeConn]{Config: Config{MaxSize: 3, MaxParallelCreates: 3}, Connect: cn.connect,
		Now: clk.Now, Jitter: func() float64 { return 1 }, Permit: ps.wait, TryPermit: ps.try})
	t.Cleanup(p.Close)
	a, err := p.Acquire(context.Background())
	require.NoError(t, err)
	b, err := p.Acquire(context.Background())
	require.NoError(t, err)
	pa, pb := a.permit.(*fakePermit), b.permit.(*fakePermit)
	p.Release(a)
	p.Release(b)
	require.False(t, p.EvictIdle(time.Minute, 0), "too young")
	clk.Advance(2 * time.Minute)
	require.False(t, p.EvictIdle(time.Minute, 2), "at the floor")
	require.True(t, p.EvictIdle(time.Minute, 1))
	require.EqualValues(t, 1, p.Stats().Evicted)
	require.Equal(t, 1, p.Stats().Total)
	require.EqualValues(t, 1, pa.released.Load()+pb.released.Load())
	require.False(t, p.EvictIdle(time.Minute, 1))
}

// upgradable is a permit from the reserve that may move to main.
type upgradable struct {
	fakePermit
	reserve bool
	room    *atomic.Int32 // main slots free
}

func (u *upgradable) Reserve() bool { return u.reserve }
func (u *upgradable) Upgrade() bool {
	if u.room.Add(-1) < 0 {
		u.room.Add(1)
		return false
	}
	u.reserve = false
	return true
}

// Retain moves reserve permits of idle connections to main while main has
// room, and stops at the first refusal.
func TestRetainUpgradesIdleReservePermits(t *testing.T) {
	var room atomic.Int32
	room.Store(1)
	cn := &connector{}
	p := New(Options[*fakeConn]{Config: Config{MaxSize: 3, MaxParallelCreates: 3}, Connect: cn.connect,
		Jitter: func() float64 { return 1 },
		Permit: func(context.Context) (Permit, error) {
			return &upgradable{reserve: true, room: &room}, nil
		},
		TryPermit: func() (Permit, bool) { return &upgradable{reserve: true, room: &room}, true }})
	t.Cleanup(p.Close)
	var cs []*Conn[*fakeConn]
	for range 3 {
		c, err := p.Acquire(context.Background())
		require.NoError(t, err)
		cs = append(cs, c)
	}
	p.Release(cs[0])
	p.Release(cs[1])
	p.Retain(-1)
	require.EqualValues(t, 1, p.Stats().PermitUpgrades, "one main slot: one upgrade")
	reserve := 0
	for _, c := range cs {
		if c.permit.(*upgradable).reserve {
			reserve++
		}
	}
	require.Equal(t, 2, reserve, "the busy connection is not touched, the second idle one found main full")
	p.Release(cs[2])
}

// Close fails every waiter, create-only ones (which returned connections
// pass over) included, and releases a permit a waiter holds.
func TestCloseFailsCreateOnlyWaiter(t *testing.T) {
	cn := &connector{}
	p := pressurePool(t, Config{MaxSize: 4, MaxParallelCreates: 1}, cn, time.Hour)
	pm := &fakePermit{}
	p.mu.Lock()
	w := p.newWaiterLocked(true)
	w.createOnly, w.permit = true, pm
	p.waiters.pushBack(w)
	p.startWaitLocked(context.Background(), Bounds{}, w)
	p.mu.Unlock()
	errc := make(chan error, 1)
	go func() { _, err := p.wait(context.Background(), Bounds{}, w); errc <- err }()
	p.Close()
	require.ErrorIs(t, <-errc, ErrClosed)
	require.EqualValues(t, 1, pm.released.Load())
}
