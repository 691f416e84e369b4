package session

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/memlimit"
	"github.com/doorman-go/doorman/internal/protocol"
)

// smallMessageLimit is the largest frame (type byte included) accepted for
// the frontend messages that carry at most a name: PostgreSQL's
// PQ_SMALL_MESSAGE_LIMIT (10000 bytes of body).
const smallMessageLimit = 1 + 4 + 10000

// checkClientMessage validates the header of a message a logged-in client
// sent, as PostgreSQL's SocketBackend does: only the frontend message types
// of protocol 3.0 are accepted, and those that carry no data have a small
// length limit. It returns the SQLSTATE and text of the FATAL error to send.
func checkClientMessage(typ byte, frameLen int) (code, msg string, ok bool) {
	switch typ {
	case protocol.MsgQuery, protocol.MsgFunctionCall, protocol.MsgParse, protocol.MsgBind, protocol.MsgCopyData:
		return "", "", true
	case protocol.MsgClose, protocol.MsgDescribe, protocol.MsgExecute, protocol.MsgFlush, protocol.MsgSync,
		protocol.MsgCopyDone, protocol.MsgCopyFail, protocol.MsgTerminate:
		if frameLen > smallMessageLimit {
			return "08P01", fmt.Sprintf("invalid message length: message type %q declares %d bytes", typ, frameLen-1), false
		}
		return "", "", true
	}
	return "08P01", fmt.Sprintf("invalid frontend message type %d", typ), false
}

// clientReadError turns a failed read of a client message header or body
// into the answer PostgreSQL would give: a FATAL ErrorResponse for a
// malformed length or a stalled message, nothing for a client that is
// simply gone. It returns the session's terminal error.
func (s *Session) clientReadError(err error) error {
	var tooLarge *protocol.MessageTooLargeError
	switch {
	case errors.Is(err, protocol.ErrInvalidLength):
		s.clientError("protocol_violation", "08P01", "invalid message length")
	case errors.As(err, &tooLarge):
		s.clientError("message_too_large", "54000", fmt.Sprintf("message of %d bytes is longer than the limit of %d bytes", tooLarge.Length, tooLarge.Max))
	case s.guard.timedOut:
		s.clientError("message_timeout", "08P01", fmt.Sprintf(
			"terminating connection: the client sent part of a message and then nothing for %s (proxy_copy_data_timeout)", s.guard.timeout))
	default:
		return fmt.Errorf("read client: %w: %w", errClientGone, err)
	}
	return fmt.Errorf("read client: %w", err)
}

// clientError counts a client's fault, logs it and sends the FATAL error
// that ends its session. Only that client is affected: the server
// connection it holds is released or destroyed by detachOnExit.
func (s *Session) clientError(reason, code, msg string) {
	if s.env.Metrics != nil {
		s.env.Metrics.ClientError(reason)
	}
	s.endByClientFault(reason, code, msg)
}

// endByClientFault is clientError for a fault already counted.
func (s *Session) endByClientFault(reason, code, msg string) {
	s.logger().Warn("client session ended by a protocol error", zap.String("reason", reason),
		zap.Stringer("addr", s.RemoteAddr), zap.String("error", msg))
	_ = s.nc.SetWriteDeadline(time.Now().Add(time.Second))
	s.fatal(code, msg) // and Serve closes without a reset
}

// stallGuard is the io.Reader under the client Reader and the owner of the
// client socket's read deadline in the client loop. While armed (the client
// has begun a message and not finished it) every read must return within
// timeout, so a client that stops in the middle of a message cannot hold its
// server connection or its buffer for ever. Between messages it bounds the
// wait for the next one by the client's release (idleWait), lazily: the
// deadline set for one wait stays for the next ones while it is at least
// half the release away, so a busy client's wait costs a clock read instead
// of two deadline changes (each a runtime timer update), and a quiet client
// is released after half to all of its release. Owned by the client loop.
type stallGuard struct {
	nc       net.Conn
	timeout  time.Duration
	armed    bool
	timedOut bool
	readErr  error // last read error, to tell a client failure from a server one
	// idleAt is the idle wait's deadline set on nc; zero when nc has none
	// of idleWait's (none at all, or an armed read's own).
	idleAt time.Time
}

func (g *stallGuard) Read(p []byte) (int, error) {
	if g.armed {
		if g.timeout > 0 {
			_ = g.nc.SetReadDeadline(time.Now().Add(g.timeout))
			g.idleAt = time.Time{} // replaced
		} else {
			g.idleClear() // no bound inside a message, not even the idle one
		}
	}
	n, err := g.nc.Read(p)
	if err != nil {
		g.readErr = err
		if g.armed && errors.Is(err, os.ErrDeadlineExceeded) {
			g.timedOut = true
		}
	}
	return n, err
}

// idleWait makes sure that the next read, a wait for the client's next
// message, ends by release from now at the latest and not before release/2.
func (g *stallGuard) idleWait(release time.Duration) {
	now := time.Now()
	if left := g.idleAt.Sub(now); !g.idleAt.IsZero() && left >= release/2 && left <= release {
		return
	}
	g.idleAt = idleDeadline(now, release)
	_ = g.nc.SetReadDeadline(g.idleAt)
}

// idleFor bounds the next read's wait by d from now, off idleWait's grid:
// the first wait after the welcome (freshGrace).
func (g *stallGuard) idleFor(d time.Duration) {
	g.idleAt = time.Now().Add(d)
	_ = g.nc.SetReadDeadline(g.idleAt)
}

// idleGrid is the spacing of the idle waits' deadlines: every session's
// falls on a multiple of it (of the wall clock), so the runtime timers of
// quiet clients expire together, at most 40 times a second, instead of one
// thread wake-up for each client.
const idleGrid = idleRelease / 4

// idleDeadline is the deadline of an idle wait that starts at now: the
// first multiple of idleGrid at least release - idleGrid away, so at most
// release away (release is a multiple of idleGrid). It keeps now's
// monotonic clock reading.
func idleDeadline(now time.Time, release time.Duration) time.Time {
	t := now.Add(release - idleGrid)
	return t.Add(idleGrid - time.Duration(t.UnixNano()%int64(idleGrid)))
}

// idleClear lifts idleWait's deadline, once it has fired or before a read
// that must not end by it.
func (g *stallGuard) idleClear() {
	if !g.idleAt.IsZero() {
		g.idleAt = time.Time{}
		_ = g.nc.SetReadDeadline(zeroTime)
	}
}

// arm bounds the reads of the rest of a message whose frameLen bytes are not
// all buffered yet; disarm lifts the bound.
func (g *stallGuard) arm(rd *protocol.Reader, frameLen int) {
	if rd.Buffered() < frameLen {
		g.armed = true
	}
}

func (g *stallGuard) disarm() {
	if g.armed {
		g.armed = false
		if !g.timedOut {
			g.idleAt = time.Time{}
			_ = g.nc.SetReadDeadline(zeroTime)
		}
	}
}

// discardFrame reads the next message and drops it without buffering it.
func (s *Session) discardFrame(frameLen int) error {
	s.guard.arm(s.crd, frameLen)
	_, err := s.crd.ForwardFrame(io.Discard)
	s.guard.disarm()
	return err
}

func newClientRead(env *Env, nc net.Conn, timeout time.Duration) *clientRead {
	return &clientRead{guard: stallGuard{nc: nc, timeout: timeout}, cmem: memlimit.NewAccount(env.Memory)}
}
