package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
)

var zeroTime time.Time

// bufPool recycles the per-direction write buffers so that an idle client
// holds none.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 8192); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 64<<10 {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// run is the client loop: read client messages, attach a server connection
// when one is needed, and forward. It returns errParked when the client was
// parked (resume continues it); otherwise the session is over.
func (s *Session) run(ctx context.Context) error {
	err := s.loop(ctx)
	if errors.Is(err, errParked) {
		return err
	}
	s.cmem.Set(0)
	s.detachOnExit()
	return err
}

func (s *Session) loop(ctx context.Context) error {
	g := s.general()
	stream := int(g.MessageSizeToBeStream)
	if stream <= 0 {
		stream = 1 << 20
	}
	checkQuery := g.PoolerCheckQuery
	var sbuf *[]byte
	for {
		srv := s.attached()
		if srv == nil && s.crd.Buffered() == 0 {
			s.state.Store(StateIdle)
			if s.env.Core != nil && (sbuf == nil || len(*sbuf) == 0) && s.adoptCore(ctx) {
				if sbuf != nil {
					putBuf(sbuf)
				}
				return errParked
			}
		}
		typ, n, err := s.peekClient(ctx)
		if errors.Is(err, errParked) {
			return err // the session is another goroutine's now: touch nothing
		}
		s.cmem.Set(grownSize(s.crd))
		if err != nil {
			return s.clientReadError(err)
		}
		if typ == protocol.MsgTerminate {
			return nil
		}
		if code, msg, ok := checkClientMessage(typ, n); !ok {
			s.clientError("protocol_violation", code, msg)
			return fmt.Errorf("client protocol violation: %s", msg)
		}
		if srv == nil && s.skipToSync {
			if err := s.skipMessage(typ, n); err != nil {
				return err
			}
			continue
		}
		mustBuffer := s.rewriting() && carriesStatementName(typ)
		whole := n <= stream || mustBuffer
		if whole && !reserveFor(&s.cmem, s.crd, n) {
			switch {
			case srv == nil && (sbuf == nil || len(*sbuf) == 0):
				if err := s.refuseRequest(typ, n); err != nil {
					return err
				}
				continue
			case !mustBuffer:
				s.memoryRefused("client", "streamed", n)
				whole = false
			default:
				s.memoryRefused("client", "session ended", n) // counts the client error
				s.endByClientFault("max_memory_usage", "53200", "out of memory: pg_doorman's max_memory_usage is reached")
				return errors.New("client message does not fit max_memory_usage")
			}
		}
		var f protocol.Frame
		if whole {
			s.guard.arm(s.crd, n)
			f, err = s.crd.Next()
			s.guard.disarm()
			s.cmem.Set(grownSize(s.crd))
			if err != nil {
				return s.clientReadError(err)
			}
		}
		if srv == nil && f != nil && typ == protocol.MsgQuery && checkQuery != "" && isCheckQuery(f.Body(), checkQuery) {
			if err := s.answerCheckQuery(); err != nil {
				return err
			}
			continue
		}
		if srv == nil && f != nil && s.rewriting() && (sbuf == nil || len(*sbuf) == 0) {
			if done, err := s.answerLocally(f); done || err != nil {
				if err != nil {
					return err
				}
				continue
			}
		}
		if sbuf == nil {
			sbuf = getBuf()
		}
		// f aliases the reader's buffer; Acquire does not touch the reader.
		if srv, err = s.forward(ctx, typ, f, sbuf); err != nil {
			if !errors.Is(err, pooler.ErrCanceled) {
				return err
			}
			putBuf(sbuf) // nothing in it: the request was the first for a server
			sbuf = nil
			if err := s.answerCanceled(typ, f == nil, n); err != nil {
				return err
			}
			continue
		}
		if grownSize(s.crd) > 0 && s.crd.Buffered() < protocol.DefaultBufferSize {
			// f has been used: a buffer grown for it goes back now, not
			// when the client next speaks.
			s.crd.Shrink()
			s.cmem.Set(grownSize(s.crd))
		}
		if srv == nil { // answered locally
			putBuf(sbuf)
			sbuf = nil
			continue
		}
		if f == nil { // large message: stream it
			s.watch(srv)
			if err := s.streamToServer(srv, sbuf, n); err != nil {
				return err
			}
			continue
		}
		if s.crd.Buffered() == 0 {
			drive := s.beginDrive()
			if err := s.flushRequest(srv, sbuf, drive); err != nil {
				s.endDrive()
				return err
			}
			putBuf(sbuf)
			sbuf = nil
			if err := s.afterFlush(srv, drive); err != nil {
				return err
			}
		}
	}
}

// beginDrive decides, before the client's messages are written, who reads
// the server's answer: the client loop itself (drive) when the client has
// sent a request and nothing more, in transaction mode; otherwise
// serverLoop, while the client loop goes on reading the client. A drive
// starts here, so that Kill aborts the server connection from the write on.
func (s *Session) beginDrive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	drive := s.srvDone == nil && s.pending > 0 && s.transactionMode()
	if drive {
		s.driving = true
	}
	return drive
}

func (s *Session) endDrive() {
	s.mu.Lock()
	s.driving = false
	s.mu.Unlock()
}

// flushRequest writes the client's messages to the server. When the client
// loop drives and its server came without a wait in the pool's queue, the
// write also waits for the answer to begin (backend.Conn.WriteAwaitRead):
// pump's first read then finds it, instead of finding the socket empty and
// waiting after that. Under a pool with more clients than servers the
// read comes first as before: there the answer is often in the socket by
// the time the goroutine reads (the backend ran while it was preempted),
// while a wait for it would only end at the scheduler's next look at the
// network, behind every runnable goroutine (docs/benchmarks-passes.md,
// seventeenth pass).
func (s *Session) flushRequest(srv *pooler.Conn, b *[]byte, drive bool) error {
	return s.writeServer(srv, b, drive && s.lastWait == waitNone)
}

// afterFlush hands the server's side to serverLoop, or drives it in the
// client loop (beginDrive decided which) until the transaction is released
// or the client has to be read again.
func (s *Session) afterFlush(srv *pooler.Conn, drive bool) error {
	if !drive {
		s.watch(srv)
		s.wakeIfFakeDue(srv)
		return nil
	}
	end := s.pumpServer(srv, true)
	s.endDrive()
	switch end {
	case pumpFailed:
		return errServerEnded
	case pumpYield:
		s.watch(srv)
	}
	return nil // released, or idle in a block: the client loop drives on
}

// errServerEnded: the server connection failed under the client, or the
// client could not be written to; pumpServer has told the client.
var errServerEnded = errors.New("server connection ended the session")

// watch starts serverLoop for srv unless it runs already.
func (s *Session) watch(srv *pooler.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != srv || s.srvDone != nil {
		return
	}
	done := make(chan struct{})
	s.srvDone = done
	go s.serverLoop(srv, done)
}

// transactionMode reports whether the pool releases servers after each
// transaction.
func (s *Session) transactionMode() bool { return s.pool.Settings().Mode() != "session" }

// streamToServer forwards a message too large to buffer in chunks. A
// failure to read the client (gone, or stalled past proxy_copy_data_timeout)
// ends the session like any client read error; the server, left in the
// middle of a message, is then destroyed by detachOnExit.
func (s *Session) streamToServer(srv *pooler.Conn, sbuf *[]byte, frameLen int) error {
	if err := s.flushServer(srv, sbuf); err != nil {
		return err
	}
	s.guard.readErr = nil
	s.guard.arm(s.crd, frameLen)
	m, err := s.crd.ForwardFrame(srv.Value.NetConn())
	s.guard.disarm()
	s.pool.Stats.BytesReceived.Add(uint64(m))
	if err == nil {
		return nil
	}
	if s.guard.readErr != nil {
		return s.clientReadError(err)
	}
	return s.serverWriteFailed(srv, err)
}

// idleRelease is how long a client between transactions keeps its read
// buffer, at most (at least half of it: see stallGuard's idleWait), until
// it has been parked and came back soon (adaptRelease). A busy client
// reads each message with one syscall into the buffer it holds; one that
// stays quiet longer gives the buffer back (the next read then takes the
// 5-byte header first) and, parkAfter times as long after its last message,
// its goroutine too: it is parked (Env.Parker), so idle clients cost no
// buffer and no goroutine stack.
const idleRelease = 100 * time.Millisecond

// parkAfter is how many releases a client waits before it is parked. A
// park and the resume after it cost far more than the read the released
// buffer costs (docs/benchmarks-passes.md, "Twelfth pass": with 400 clients at
// 500 transactions a second, 148–172 µs of CPU per transaction parking at
// the release, 125–135 at four releases), so the goroutine stays longer
// than the buffer.
const parkAfter = 4

// errParked: the client was handed to the Parker; the goroutine that ran
// the session must return without touching it.
var errParked = errors.New("client parked")

// freshGrace is how long a client's first wait after its welcome lasts
// before it is parked deep (peekClient). A deep park and the resume at the
// first query (a dup, the Parker, net.FileConn and the socket options set
// twice, a new goroutine whose stack grows again) made a connection for one
// transaction cost 150-400 µs more CPU on the hand rig (docs/benchmarks-passes.md,
// twentieth pass); a client that connects and queries at once is spared
// them, and a burst of logins that stay quiet keeps a goroutine per client
// for this long only.
const freshGrace = 20 * time.Millisecond

// peekClient reads the next client message header. When it has to wait
// between transactions, a client that stays quiet for its release
// (adaptRelease) gives back its read buffer, and one quiet for parkAfter
// releases is parked (one that cannot be parked waits on without a
// buffer). Between transactions may begin during the wait, when
// serverLoop releases the server.
func (s *Session) peekClient(ctx context.Context) (byte, int, error) {
	if s.migrating.Load() && s.idleForMigration() {
		if err := s.handOff(); err != nil {
			return 0, 0, err
		}
	}
	if s.resumed {
		// Woken because the socket is readable: read it, do not wait.
		s.resumed = false
		return s.crd.PeekHeader()
	}
	if s.fresh {
		// The first read after the welcome waits freshGrace at most. A
		// client that sends its first message by then (one that connects
		// for a transaction and goes) is read here; one that has sent
		// nothing (a driver's pool opening connections ahead of use) is
		// parked deep then instead of after idleRelease, so that a burst
		// of logins does not keep a goroutine stack per client for that
		// long. A byte that arrives after the park wakes it at once
		// (level triggered).
		s.fresh = false
		if s.crd.Buffered() == 0 && s.parkable() && !s.migrating.Load() && s.attached() == nil {
			s.guard.idleFor(freshGrace)
			typ, n, err := s.crd.PeekHeader()
			if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
				return typ, n, err // the deadline stays for the next wait
			}
			s.guard.idleClear()
			switch {
			case s.crd.Buffered() > 0 || s.attached() != nil: // part of a header, or attached meanwhile: the loop below
			case s.migrating.Load(): // Migrate came during the wait
				if err := s.handOff(); err != nil {
					return 0, 0, err
				}
			default:
				s.crd.Release()
				if s.park(ctx, true) {
					return 0, 0, errParked
				}
			}
		}
	}
	// A client that can be parked waits in two stages: its release
	// (idleRelease << releaseShift) gives back the read buffer, and
	// parkAfter times that parks it; see parkAfter. A client whose last
	// wait outlasted its release waits without the buffer from the start
	// (slow), until one comes back within its release again.
	release := idleRelease << s.releaseShift
	wait, unbuffered := release, false
	var since time.Time // of a slow client's wait
	if s.slow && s.parkable() && s.attached() == nil && s.crd.Buffered() == 0 {
		s.crd.Release() // the loop's first turn sets cmem (nothing grown)
		since = time.Now()
		wait, unbuffered = release*parkAfter, true
	}
	for {
		if b := s.crd.Buffered(); b > 0 {
			if b < protocol.HeaderLen {
				// The rest of the header is read now, and a client that
				// stops in it waits as before, not until the idle wait's
				// deadline.
				s.guard.idleClear()
			}
			return s.crd.PeekHeader()
		}
		if s.attached() == nil {
			s.crd.Shrink() // a buffer grown for a large message goes back now
			s.cmem.Set(grownSize(s.crd))
		}
		s.guard.idleWait(wait)
		typ, n, err := s.crd.PeekHeader()
		// errors.Is, not errors.As into a net.Error: that would put the
		// variable on the heap on every wait.
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			if !since.IsZero() && time.Since(since) < release {
				s.setSlow(false) // back within its release
			}
			return typ, n, err // the deadline stays for the next wait
		}
		s.guard.idleClear() // fired: no later read may end by it
		if s.attached() != nil || s.crd.Buffered() > 0 {
			continue // inside a transaction, or in the middle of a header
		}
		s.crd.Release()
		if s.migrating.Load() {
			if err := s.handOff(); err != nil {
				return 0, 0, err
			}
			continue
		}
		if !unbuffered && s.parkable() {
			// The release: the buffer is gone, the goroutine waits on
			// until the park.
			s.setSlow(true)
			wait, unbuffered = release*(parkAfter-1), true
			continue
		}
		if s.park(ctx, false) {
			return 0, 0, errParked
		}
		if s.migrating.Load() {
			continue // Migrate came while park was refused: hand off next turn
		}
		return s.crd.PeekHeader()
	}
}

func (s *Session) attached() *pooler.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// forward accounts a client message for the release rule and appends it
// (rewritten when needed) to sbuf, under the same lock that serverLoop
// takes to decide on release, attaching a server connection first when the
// client has none. f is nil for a message that will be streamed.
func (s *Session) forward(ctx context.Context, typ byte, f protocol.Frame, sbuf *[]byte) (*pooler.Conn, error) {
	s.mu.Lock()
	srv := s.srv
	if srv == nil {
		s.mu.Unlock()
		// Released after run looked (the client answered ReadyForQuery at
		// once, as a synchronous PQprepare does): still answer locally.
		if f != nil && s.rewriting() && len(*sbuf) == 0 {
			if done, err := s.answerLocally(f); done || err != nil {
				return nil, err
			}
		}
		var err error
		if srv, err = s.attach(ctx, sbuf); err != nil {
			return nil, err
		}
		s.mu.Lock()
	}
	s.accountLocked(typ, time.Time{})
	if f != nil {
		*sbuf = s.rw.Client(srv.Value, f, *sbuf)
	} else if s.rewriting() && expectsAnswer(typ) {
		s.rw.push(request{kind: typ})
	}
	s.mu.Unlock()
	return srv, nil
}

func carriesStatementName(typ byte) bool {
	return typ == protocol.MsgParse || typ == protocol.MsgBind || typ == protocol.MsgDescribe || typ == protocol.MsgClose
}

// wakeIfFakeDue makes serverLoop emit answers the pooler owes when nothing
// from the server precedes them (e.g. a cached Parse followed by Flush):
// serverLoop is blocked reading the server, so its read is interrupted.
func (s *Session) wakeIfFakeDue(srv *pooler.Conn) {
	if !s.rewriting() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.rw.head(); h != nil && h.fake && s.srv == srv {
		s.wake = true
		_ = srv.Value.NetConn().SetReadDeadline(time.Unix(1, 0))
	}
}

// accountLocked counts a client message on its way to the server: a
// query starts at at (zero: now) when none is pending.
func (s *Session) accountLocked(typ byte, at time.Time) {
	switch typ {
	case protocol.MsgQuery, protocol.MsgSync, protocol.MsgFunctionCall:
		if s.pending == 0 {
			s.queryStart = s.sinceConnected(at)
		}
		s.pending++
		s.partial = false
	case protocol.MsgCopyData, protocol.MsgCopyDone, protocol.MsgCopyFail:
		if s.pending == 0 {
			s.partial = true
		}
	default:
		s.partial = true
	}
}

// flushServer writes b to srv and empties it; a failed write ends the
// server side (serverWriteFailed).
func (s *Session) flushServer(srv *pooler.Conn, b *[]byte) error {
	return s.writeServer(srv, b, false)
}

// writeServer writes b to srv, with WriteAwaitRead when await.
func (s *Session) writeServer(srv *pooler.Conn, b *[]byte, await bool) error {
	if len(*b) == 0 {
		return nil
	}
	var n int
	var err error
	if await {
		n, err = srv.Value.WriteAwaitRead(*b)
	} else {
		n, err = srv.Value.Write(*b)
	}
	s.pool.Stats.BytesReceived.Add(uint64(n))
	*b = (*b)[:0]
	if err != nil {
		return s.serverWriteFailed(srv, err)
	}
	return nil
}

// serverWriteFailed closes the server socket so that serverLoop notices,
// tells the client, and ends; then the client loop ends too.
func (s *Session) serverWriteFailed(srv *pooler.Conn, err error) error {
	_ = srv.Value.Abort()
	s.mu.Lock()
	done := s.srvDone
	s.mu.Unlock()
	if done != nil {
		<-done // serverLoop notices the closed socket and tells the client
	} else {
		s.serverReadFailed(srv, err)
	}
	return fmt.Errorf("write to server: %w", err)
}

// acquireFailed ends a logged-in client whose transaction got no server
// connection: it is told why, and it is counted by reason.
func (s *Session) acquireFailed(err error) error {
	s.logger().Warn("no server connection for client", zap.Error(err))
	ce := serverFailure(err)
	if m, ok := s.env.Metrics.(AcquireMetrics); ok {
		m.AcquireFailed(ce.Reason)
	}
	return s.refuse(ce)
}

func isCheckQuery(body []byte, check string) bool {
	if len(body) != len(check)+1 || body[len(body)-1] != 0 {
		return false
	}
	return string(body[:len(check)]) == check
}

// answerCheckQuery answers pooler_check_query without a server: an empty
// query's reply, as PostgreSQL gives for ";".
func (s *Session) answerCheckQuery() error {
	b := protocol.EmptyQueryResponse{}.Encode(nil)
	b = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(b)
	return s.Write(b)
}

// detachOnExit runs when the client loop ends: it makes serverLoop stop and
// waits for it, so the server connection is released or destroyed before
// the session is gone.
func (s *Session) detachOnExit() {
	s.mu.Lock()
	s.closing = true
	c, done := s.srv, s.srvDone
	// No serverLoop: either idle in a transaction block with everything
	// answered (rolled back and reused), or attached for messages not
	// yet sent, which the connection already counts with the SETs put
	// ahead of them (destroyed rather than reused).
	clean := s.pending == 0 && !s.partial && s.params.n == 0
	if c != nil && done == nil {
		s.srv = nil
		s.resetQueueLocked()
	}
	s.mu.Unlock()
	if c == nil {
		return
	}
	if done == nil {
		s.pool.Stats.ClientsActive.Add(-1)
		if clean {
			s.giveBack(c)
		} else {
			s.pool.Destroy(c)
		}
		return
	}
	_ = c.Value.NetConn().SetReadDeadline(time.Unix(1, 0))
	_ = s.nc.SetWriteDeadline(time.Unix(1, 0))
	<-done
}

func cleanupQuery(mode string, c *backend.Conn) string {
	if mode == "session" {
		return "DISCARD ALL"
	}
	var q []string
	if c.DirtySet || c.DirtyPrepare || c.DirtyCursor {
		q = append(q, "RESET ROLE")
	}
	if c.DirtySet {
		q = append(q, "RESET ALL")
	}
	if c.DirtyPrepare {
		q = append(q, "DEALLOCATE ALL")
	}
	if c.DirtyCursor {
		q = append(q, "CLOSE ALL")
	}
	return strings.Join(q, "; ")
}

// isFallbackFailure reports a failed Patroni-assisted fallback: the client
// gets the sanitized message, the details are in the log.
func isFallbackFailure(err error) bool {
	var re *fallback.RejectedError
	var de *fallback.DeadlineError
	return errors.As(err, &re) || errors.As(err, &de) || errors.Is(err, fallback.ErrNoCandidates)
}
