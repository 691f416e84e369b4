package session

import (
	"context"
	"encoding/binary"
	"errors"
	"syscall"

	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
	"github.com/doorman-go/doorman/internal/txloop"
)

// The transaction loop (Env.Loops). Not wired yet: the daemon leaves
// Env.Loops empty, so mayLoop is false and nothing below runs in
// pg_doorman. With loops given, TestForwardPathAllocations passes (0
// allocations per transaction) but TestDisconnectInsideBlockRollsBack and
// the park tests, which expect idle clients in Env.Parker, do not.
//
// A transaction-mode client over
// plaintext that waits for its next request, between transactions or
// idle inside a transaction block, is handed to an event loop instead of
// waiting in its goroutine, which ends. The loop runs the client's next
// request itself when it can do so without waiting for anything but
// sockets: the request is whole in one read and made of Query or
// extended-protocol messages ending with Sync or Query, a server is idle
// in the pool (TryAcquire; or one is attached already, in a block) whose
// parameters need no SETs, and the answer comes in messages that fit the
// server Reader's buffer and the client takes at once. It then reads the
// answer as the server's descriptor becomes readable, does per message what
// pump does (rewriter, command tags, ParameterStatus, FATAL) and, at the
// ReadyForQuery, what readyForQuery does, so that the common transaction
// costs no goroutine hand-off.
//
// Everything else leaves the loop (leaveLoop) in a state the goroutine
// path takes up (afterLoop): the bytes read from either side stay in the
// session's Readers (SetSource swaps their non-blocking source for the
// blocking one), and what the loop had not yet written is written first.
// So the queue, SETs, COPY, streaming, a client that does not read, a
// message that needs a bigger buffer, any error, Kill and Migrate all run
// as they do without a loop.
//
// While looped, the loop's goroutine owns the session as the client loop
// does: its descriptors, Readers and rewriter. Kill and Migrate do not
// touch them; they ask the loop to hand the session back (Kick).

// errWouldBlock is what a loop's non-blocking source returns when the
// socket has nothing to read.
var errWouldBlock = errors.New("would block")

// fdSource reads a socket the loop owns with raw non-blocking calls.
type fdSource struct{ fd int }

func (f *fdSource) Read(p []byte) (int, error) {
	n, e := rawio.ReadFD(uintptr(f.fd), p)
	switch {
	case e == 0 && n == 0:
		return 0, errLoopEOF
	case e == 0:
		return n, nil
	case e == syscall.EAGAIN:
		return 0, errWouldBlock
	}
	return 0, e
}

// errLoopEOF: the peer closed; the goroutine path reads the end again.
var errLoopEOF = errors.New("end of stream in loop")

// looping is a session's state on its loop; the loop's goroutine owns it
// while the session is looped.
type looping struct {
	loop *txloop.Loop
	ctx  context.Context
	// cli and srv read the client's and the attached server's descriptors
	// (srv.fd -1: no server in the set).
	cli, srv fdSource
	// driving: the request is written, the answer not all read.
	driving bool
	// clientEdge: the client's socket became readable while driving.
	clientEdge bool
	out        *[]byte // client-bound bytes not yet written; nil between requests
	// killReq (under the session's mu) is a Kill that came while looped.
	killReq *killRequest
}

// loopExit is what the goroutine path has to finish when a session leaves
// its loop.
type loopExit struct {
	write   *[]byte // a request not all written to the server
	driving bool    // the answer is not all read (out: bytes for the client first)
	out     *[]byte
	ready   byte // a ReadyForQuery read, with this status, not yet handled
	yield   bool // the server waits for the client (COPY from the client)
}

// killRequest is a Kill that came while the session was looped.
type killRequest struct{ code, msg string }

// loopRequest reports how many whole messages b holds when they are a
// request the loop runs itself: Query, Parse, Bind, Describe, Execute,
// Close and Flush messages, well-formed by checkClientMessage, the last a
// Query or Sync, and, for a client with no server yet (fresh), a first
// message that neither the check query nor the rewriter's local answers
// (answerLocally) would take. Anything else, a partial message included,
// is 0, false: the goroutine path reads it.
func loopRequest(b []byte, fresh, rewriting bool, check string) (int, bool) {
	count, last := 0, false
	for len(b) > 0 {
		if len(b) < protocol.HeaderLen {
			return 0, false
		}
		typ := b[0]
		length := binary.BigEndian.Uint32(b[1:5])
		if length < 4 || uint64(length) >= uint64(len(b)) {
			return 0, false
		}
		n := 1 + int(length)
		if _, _, ok := checkClientMessage(typ, n); !ok {
			return 0, false
		}
		body := b[protocol.HeaderLen:n]
		switch typ {
		case protocol.MsgQuery, protocol.MsgSync:
			last = true
		case protocol.MsgParse, protocol.MsgBind, protocol.MsgDescribe, protocol.MsgExecute,
			protocol.MsgClose, protocol.MsgFlush:
			last = false
		default:
			return 0, false
		}
		if count == 0 && fresh {
			switch {
			case typ == protocol.MsgQuery && check != "" && isCheckQuery(body, check):
				return 0, false
			case rewriting && typ == protocol.MsgParse && (len(body) == 0 || body[0] != 0),
				rewriting && (typ == protocol.MsgClose || typ == protocol.MsgSync || typ == protocol.MsgFlush):
				return 0, false
			}
		}
		b = b[n:]
		count++
	}
	if !last {
		return 0, false
	}
	return count, true
}

// loopServerTLS reports whether the pool's server connections may use TLS,
// which the loop cannot read.
func loopServerTLS(mode string) bool {
	switch mode {
	case "", "disable", "allow":
		return false
	}
	return true
}

// afterLoop continues a session that left its loop, in a new goroutine:
// a Kill that came meanwhile first, then what the loop left unfinished,
// then the client loop.
func (s *Session) afterLoop(ctx context.Context, k loopExit, kr *killRequest) {
	c := s.attached()
	if kr != nil {
		if k.driving && c != nil {
			// Kill aborts a server the session waits on.
			s.mu.Lock()
			s.driving = true
			s.mu.Unlock()
		}
		s.Kill(kr.code, kr.msg)
	}
	err := s.finishLoopRequest(c, k)
	if err != nil {
		s.cmem.Set(0)
		s.detachOnExit()
		s.end(err)
		return
	}
	s.end(s.run(ctx))
}

// finishLoopRequest does what the loop left of a request: the rest of its
// write to the server, or the rest of its answer.
func (s *Session) finishLoopRequest(c *pooler.Conn, k loopExit) error {
	switch {
	case c == nil:
		return nil
	case k.write != nil:
		err := s.flushServer(c, k.write)
		putBuf(k.write)
		if err != nil {
			return err
		}
		return s.afterFlush(c)
	case k.driving:
		s.mu.Lock()
		s.driving = true
		s.mu.Unlock()
		end := s.finishAnswer(c, k)
		s.mu.Lock()
		s.driving = false
		s.mu.Unlock()
		return s.afterPump(c, end)
	}
	return nil // idle in a block: the client loop drives on
}

// finishAnswer writes what the loop read of an answer and reads the rest.
func (s *Session) finishAnswer(c *pooler.Conn, k loopExit) pumpEnd {
	out := k.out
	if out == nil {
		out = getBuf()
	}
	defer putBuf(out)
	if err := s.flushClient(out); err != nil {
		s.attachmentFailed(c, &clientWriteError{err})
		return pumpFailed
	}
	switch {
	case k.yield:
		return pumpYield
	case k.ready != 0:
		released, err := s.readyForQuery(c, k.ready, out, true)
		switch {
		case err != nil:
			s.attachmentFailed(c, err)
			return pumpFailed
		case released:
			return pumpReleased
		}
		switch s.answeredState() {
		case answeredInBlock:
			return pumpInBlock
		case answeredPartial:
			return pumpYield
		}
	}
	return s.pumpServer(c, true)
}

// afterPump is what the client loop does once pumpServer, run inline,
// stopped.
func (s *Session) afterPump(srv *pooler.Conn, end pumpEnd) error {
	switch end {
	case pumpFailed:
		return errServerEnded
	case pumpYield:
		s.watch(srv)
	}
	return nil // released, or idle in a block: the client loop drives on
}
