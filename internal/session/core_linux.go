//go:build linux

package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// coreReadSize is the loop's one read buffer: every socket is read into it
// and what is left of a read once its messages are handled is either
// forwarded, held (at most one read per waiting client) or handed back.
const coreReadSize = 32 << 10

// NewCore starts the transaction core's loop. log and metrics may be nil.
// Close stops it.
func NewCore(log *zap.Logger, metrics CoreMetrics) (*Core, error) {
	if log == nil {
		log = zap.NewNop()
	}
	c := &Core{log: log, metrics: metrics, buf: make([]byte, coreReadSize), clients: map[*coreClient]struct{}{},
		servers: map[*pooler.Conn]*coreServer{}, queues: map[*pooler.Pool]*coreQueue{}, done: make(chan struct{})}
	c.started = time.Now()
	c.now = c.started
	set, err := rawio.NewEdgePolledEpoll(128, coreRelook, c.dispatch)
	if err != nil {
		return nil, fmt.Errorf("transaction core: %w", err)
	}
	c.set = set
	go c.run()
	return c, nil
}

func (c *Core) run() {
	defer close(c.done)
	failed := c.set.Run()
	if failed != nil {
		// Not Close: the loop cannot go on. Its clients are told, and
		// the failure is counted (op "loop").
		c.log.Error("transaction core stopped", zap.Error(failed))
		if c.metrics != nil {
			c.metrics.CoreFailure("loop")
		}
	}
	// The loop is over: nothing else touches its sessions now. Clients
	// adopted since its last batch are its own too; no more come.
	c.ended.Store(true)
	c.mu.Lock()
	adds := c.adds
	c.adds = nil
	c.mu.Unlock()
	for _, a := range adds {
		c.clients[a.cl] = struct{}{}
	}
	for cl := range c.clients {
		if failed != nil {
			_ = c.flush(&cl.end)
			_, _ = cl.ps.Write(protocol.AppendError(nil, "FATAL", "58000", coreFailedMessage))
		}
		c.endClient(cl, errCoreClosed)
	}
	for _, q := range c.queues {
		for _, stop := range q.sentinels {
			close(stop) // still listed: not stopped yet (dequeue forgets the ones it stops)
		}
		q.sentinels = nil
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Lock()
	posts := c.posts
	c.posts, c.stopped = nil, true
	c.mu.Unlock()
	for _, p := range posts {
		c.dropPost(p)
	}
	_ = c.set.Close()
}

// Close stops the loop: sessions still in it end (the daemon has drained
// them by then), and it waits for the loop's goroutine.
func (c *Core) Close() {
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		c.posts = append(c.posts, corePost{kind: postClose})
	}
	c.mu.Unlock()
	c.set.Wake()
	<-c.done
	c.sentinelsRun.Wait()
}

// Core is the transaction core: one event loop that owns the client
// sockets of plaintext transaction-mode sessions between their welcome and
// their end, and runs their transactions (doc.go).
type Core struct {
	set     *rawio.PolledEpoll
	log     *zap.Logger
	metrics CoreMetrics // nil: not counted

	mu      sync.Mutex
	posts   []corePost
	adds    []coreAdd // adopted clients the loop has not taken yet (add)
	spare   []coreAdd // the loop's: adds' last backing array, for reuse
	closing bool
	stopped bool // the loop has ended: posts are dropped at once
	// ended: the loop has ended. Set before the loop takes the last adds
	// under mu, so that add, which asks it under mu, refuses from then on;
	// coreMayAdopt asks it without mu, so that after a failure of the loop
	// sessions stay in their goroutines.
	ended atomic.Bool

	done chan struct{}

	// The loop's own.
	buf      []byte
	heldFree [][]byte   // queued clients' held buffers, for reuse (recycle)
	ends     []*coreEnd // by descriptor
	batch    []*coreEnd
	again    []*coreEnd // ends a level-triggered set would report again (readAgain)
	clients  map[*coreClient]struct{}
	servers  map[*pooler.Conn]*coreServer // kept in the set while pooled
	queues   map[*pooler.Pool]*coreQueue
	// lastPool and lastQueue: the last entry of queues found (queue).
	lastPool  *pooler.Pool
	lastQueue *coreQueue
	timer     *time.Timer   // the wait timer (tick), armed for timerAt
	timerAt   time.Duration // on the loop's clock; 0: not armed
	started   time.Time     // the loop's clock's zero
	now       time.Time     // read once per batch: what the batch's work counts by

	sentinelsRun  sync.WaitGroup // Close waits for the sentinels to end
	sentinelBacks atomic.Uint64  // sentinels' posts the loop took (tests)

	// tlsPools: pools whose servers turned out to use TLS, which the
	// loop cannot read raw; their sessions are not adopted.
	tlsPools sync.Map // *pooler.Pool -> struct{}
}

type postKind uint8

const (
	postSentinel postKind = iota // a sentinel's acquire came back
	postCancel                   // a cancel request for a queued client
	postTick                     // the wait timer: expire queued clients
	postKill                     // Kill
	postHandBack                 // Migrate: back to a goroutine at its idle point
	postClose
)

type corePost struct {
	kind postKind
	cl   *coreClient
	pc   *pooler.Conn
	err  error
	p    *pooler.Pool  // postSentinel
	stop chan struct{} // postSentinel: the sentinel's
}

// post hands p to the loop; false when the loop has ended.
func (c *Core) post(p corePost) bool {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return false
	}
	c.posts = append(c.posts, p)
	c.mu.Unlock()
	c.set.Wake()
	return true
}

// dropPost undoes a post the loop will never see.
func (c *Core) dropPost(p corePost) {
	if p.pc != nil {
		p.p.Release(p.pc)
	}
}

// coreEnd is one socket in the set.
type coreEnd struct {
	fd       int
	interest uint32 // what the set waits for (EPOLLET aside)
	// hup: EPOLLRDHUP, EPOLLHUP and EPOLLERR once the set reported them.
	// The set's members are edge-triggered, so an event is reported once;
	// what a level-triggered set would report again the loop reports to
	// itself (Core.again): a read that filled its buffer, and a hang-up,
	// whose end of file a later read finds. (Beside interest, it fills
	// what was padding: an idle client keeps its size class.)
	hup uint32
	out []byte // bytes for this socket not written yet
	cl  *coreClient
	srv *coreServer
}

// coreEdge: every member of the core's set is registered edge-triggered.
const coreEdge = unix.EPOLLET

// coreRelook: after a batch of this many events or more the loop looks at
// the set again before it waits in the netpoller (rawio's
// NewEdgePolledEpoll): a quiet loop woken for one event goes back to wait
// without a look that would find nothing (4 epoll calls per wake-up
// became 3 with 200 clients that pause), a busy one finds what came
// while it served without a wait (docs/benchmarks-passes.md,
// "Thirty-fourth pass").
const coreRelook = 2

// againRounds bounds how often one batch serves Core.again; what is left
// waits for the batch after, which the loop's own Wake brings.
const againRounds = 16

// coreSocket is the client socket of a session the core owns: a parked
// socket (a dup of the client's descriptor) that knows its coreClient, so
// that Kill and Migrate find the loop. cl is nil once the loop let go;
// both under the session's mu.
type coreSocket struct {
	parkedSocket
	cl *coreClient
}

// coreLocked is the session's place in the core, under mu; nil when the
// core does not own it.
func (s *Session) coreLocked() *coreClient {
	if cs, ok := s.raw.(*coreSocket); ok {
		return cs.cl
	}
	return nil
}

// coreClient is a session's place in the loop; every idle client of the
// core keeps one, so it is kept small (TestParkedClientMemory).
type coreClient struct {
	s   *Session
	ctx context.Context
	ps  *coreSocket
	end coreEnd
	srv *coreServer
	// held: client bytes read and not forwarded yet, while it waits in
	// its queue (at most one read: the client is not read meanwhile) or
	// until the session goes back to a goroutine (handBack).
	held []byte
	// since and deadline (query_wait_timeout's, 0: none) of its wait, on
	// the loop's clock (Core.clock).
	since, deadline time.Duration
	hold            protocol.Hold    // serverHold(s), made at its first attach
	kill            *protocol.Notice // Kill's last word, under s.mu
	queued          bool             // in its pool's queue (coreQueue)
	handBack        bool             // to a goroutine once its server is between messages
	dead            bool             // hung up while answers were due: the server is read on (clientLost)
	gone            bool             // ended or handed back: the loop is done with it
	why             handBackReason   // handBack's, for CoreMetrics
}

type coreServer struct {
	pc  *pooler.Conn
	end coreEnd
	cl  *coreClient
	sp  *protocol.Splitter
}

func (c *Core) dispatch(events []unix.EpollEvent) bool {
	// One clock reading for the batch, as PgBouncer's loop caches its
	// time: the pool's and the statistics' readings made about nine vDSO
	// clock reads per transaction (docs/benchmarks-passes.md, twenty-seventh
	// pass).
	c.now = time.Now()
	c.takeAdds()
	c.batch = c.batch[:0]
	for i := range events {
		var e *coreEnd
		if fd := int(events[i].Fd); !c.set.IsWake(events[i].Fd) && fd < len(c.ends) {
			e = c.ends[fd]
		}
		c.batch = append(c.batch, e)
	}
	for i := range events {
		ev := &events[i]
		if c.set.IsWake(ev.Fd) {
			if !c.woken() {
				return false
			}
			continue
		}
		e := c.batch[i]
		if e == nil || e.fd < 0 || (e.fd < len(c.ends) && c.ends[e.fd] != e) {
			continue // ended earlier in this batch
		}
		e.hup |= ev.Events & (unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR)
		c.event(e, ev.Events)
	}
	clear(c.batch)
	for round := 0; len(c.again) > 0; round++ {
		if round == againRounds {
			c.set.Wake() // the rest in the next batch
			break
		}
		c.serveAgain()
	}
	return true
}

func (c *Core) event(e *coreEnd, events uint32) {
	if e.cl != nil {
		c.clientEvent(e.cl, events)
	} else {
		c.serverEvent(e.srv, events)
	}
}

// readAgain is called after a read of n bytes from e: a read that filled
// the loop's buffer may have left more behind, and after a hang-up a
// later read finds the end of the file. Either way a level-triggered set
// would report e again; the loop does it itself (again). An end is read
// once per batch or round of again at most, so it is in again once; after
// a batch that ran out of rounds it may be there twice, and the second
// read finds what came since, or nothing.
func (c *Core) readAgain(e *coreEnd, n int) {
	if n == len(c.buf) || e.hup != 0 {
		c.again = append(c.again, e)
	}
}

// serveAgain reports to each end in again what a level-triggered set's
// next look would: its input while the loop waits for it, and a hang-up
// once seen. An end that left the set, or whose input the loop does not
// wait for now, is dropped: when its interest widens again, the
// EPOLL_CTL_MOD that widens it reports what is there.
func (c *Core) serveAgain() {
	ends := c.again
	c.again = nil
	for i, e := range ends {
		ends[i] = nil
		if e.fd < 0 || e.fd >= len(c.ends) || c.ends[e.fd] != e {
			continue
		}
		events := e.interest&unix.EPOLLIN | e.hup
		if events == 0 {
			continue
		}
		c.event(e, events)
	}
	if c.again == nil {
		c.again = ends[:0] // its array again
	}
}

// woken takes the posts; false ends the loop. The adds come with them,
// first: a post about a session (Kill, Migrate) comes after its add.
func (c *Core) woken() bool {
	c.set.DrainWake()
	c.mu.Lock()
	posts := c.posts
	c.posts = nil
	adds := c.swapAddsLocked()
	c.mu.Unlock()
	c.trackAdds(adds)
	for i, p := range posts {
		switch p.kind {
		case postClose:
			for _, q := range posts[i+1:] {
				c.dropPost(q)
			}
			return false
		case postSentinel:
			c.sentinelBack(p)
		case postCancel:
			c.canceled(p.cl)
		case postTick:
			c.tick()
		case postKill:
			c.kill(p.cl)
		case postHandBack:
			if cl := p.cl; !cl.gone && cl.srv == nil && !cl.queued {
				c.handBack(cl, nil, nil, whyMigrate)
			} // otherwise at its release (readyForQuery)
		}
	}
	return true
}

func (c *Core) register(e *coreEnd, interest uint32) bool {
	c.track(e, interest)
	err := c.set.Ctl(unix.EPOLL_CTL_ADD, e.fd, interest|coreEdge)
	if errors.Is(err, unix.EEXIST) {
		err = c.set.Ctl(unix.EPOLL_CTL_MOD, e.fd, interest|coreEdge)
	}
	return err == nil
}

// track puts e in the loop's table of the set's sockets (ends), for a
// registration with interest made or about to be made.
func (c *Core) track(e *coreEnd, interest uint32) {
	if e.fd >= len(c.ends) {
		grown := make([]*coreEnd, max(e.fd+1, 2*len(c.ends), 64))
		copy(grown, c.ends)
		c.ends = grown
	}
	if old := c.ends[e.fd]; old != nil && old != e && old.srv != nil {
		// A pooled server whose descriptor was closed elsewhere (and so
		// left the set): its number is someone else's now.
		delete(c.servers, old.srv.pc)
	}
	c.ends[e.fd] = e
	e.interest = interest
}

func (c *Core) unregister(e *coreEnd) {
	if e.fd < 0 {
		return
	}
	if e.fd < len(c.ends) && c.ends[e.fd] == e {
		c.ends[e.fd] = nil
		_ = c.set.Ctl(unix.EPOLL_CTL_DEL, e.fd, 0)
	}
}

// failed counts a failure of the loop's own (an epoll_ctl refused).
func (c *Core) failed(op string) {
	c.log.Warn("transaction core failure", zap.String("op", op))
	if c.metrics != nil {
		c.metrics.CoreFailure(op)
	}
}

// coreFailedMessage is the last word of a client whose loop failed: the
// failure is the pooler's, outside PostgreSQL (class 58, system_error).
const coreFailedMessage = "terminating connection because the pooler's transaction loop failed"

func (c *Core) flush(e *coreEnd) bool {
	if len(e.out) == 0 {
		return true
	}
	n, errno := rawio.WriteFD(uintptr(e.fd), e.out)
	if errno == unix.EAGAIN {
		return true
	}
	if errno != 0 {
		return false
	}
	if e.srv != nil {
		if e.srv.cl != nil {
			e.srv.cl.s.pool.Stats.BytesReceived.Add(uint64(n))
		}
	} else if e.cl != nil {
		e.cl.s.pool.Stats.BytesSent.Add(uint64(n))
	}
	e.out = e.out[:copy(e.out, e.out[n:])]
	if len(e.out) == 0 && cap(e.out) > 2*coreReadSize {
		e.out = nil // a burst's buffer goes back
	}
	return true
}

// refresh sets what the loop waits for on cl and its server: a socket is
// read only while its peer has taken everything, so that what the loop
// holds for a client or server that does not read stays bounded.
func (c *Core) refresh(cl *coreClient) {
	if cl.gone || cl.queued {
		return
	}
	if cl.dead {
		if cs := cl.srv; cs != nil {
			c.setInterest(&cs.end, unix.EPOLLIN|unix.EPOLLRDHUP)
		}
		return
	}
	want := uint32(unix.EPOLLRDHUP)
	cs := cl.srv
	if !cl.handBack && (cs == nil || len(cs.end.out) == 0) {
		want |= unix.EPOLLIN
	}
	if len(cl.end.out) > 0 {
		want |= unix.EPOLLOUT
	}
	c.setInterest(&cl.end, want)
	if cs != nil && cs.end.fd >= 0 {
		w := uint32(unix.EPOLLRDHUP)
		if len(cl.end.out) == 0 {
			w |= unix.EPOLLIN
		}
		if len(cs.end.out) > 0 {
			w |= unix.EPOLLOUT
		}
		c.setInterest(&cs.end, w)
	}
}

func (c *Core) setInterest(e *coreEnd, want uint32) {
	if e.interest == want || e.fd < 0 {
		return
	}
	e.interest = want
	// A MOD reports what is ready now, edge or not: an interest that
	// widens finds what came while the loop did not wait for it.
	_ = c.set.Ctl(unix.EPOLL_CTL_MOD, e.fd, want|coreEdge)
}
