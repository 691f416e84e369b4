package session

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/memlimit"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
)

// pumpEnd is how pumpServer stopped.
type pumpEnd int

const (
	// pumpReleased: c went back to the pool at the safe point.
	pumpReleased pumpEnd = iota
	// pumpFailed: the server or the client failed; it has been handled
	// (c released or destroyed, the client told) and the session ends.
	pumpFailed
	// pumpYield (inline only): the server waits for the client but may
	// still speak unasked (a COPY from the client, extended-protocol
	// messages after the last Sync); c stays attached and needs serverLoop.
	pumpYield
	// pumpInBlock (inline only): every request is answered and the server
	// is idle inside a transaction block; c stays attached, and the client
	// loop drives the client's next request too. As when a client talks
	// to PostgreSQL directly, anything the server says meanwhile (a FATAL
	// for idle_in_transaction_session_timeout, a terminated backend) is
	// read with the answer to that next request.
	pumpInBlock
)

// serverLoop is the goroutine that forwards server → client while c is
// attached and the client loop reads the client at the same time: it is
// started for what the client loop cannot drive itself (see drive). It
// owns c's Reader and the client-bound buffer until it ends.
func (s *Session) serverLoop(c *pooler.Conn, done chan struct{}) {
	defer close(done)
	s.pumpServer(c, false)
}

// pumpServer forwards server → client and releases c at the safe point.
// inline means the client loop runs it itself (drive) and reads nothing
// from the client meanwhile: it then stops with pumpYield as soon as the
// server is waiting for the client. Every failure of the attachment comes
// out of pump as an error and is handled here, in one place
// (attachmentFailed).
func (s *Session) pumpServer(c *pooler.Conn, inline bool) pumpEnd {
	end, err := s.pump(c, inline)
	if err != nil {
		s.attachmentFailed(c, err)
		return pumpFailed
	}
	return end
}

// ClientWriteMetrics is implemented by Env.Metrics hooks that count
// writes to a logged-in client that failed during a transaction, by what
// became of the server connection: "closed" (the answer was cut, so the
// connection cannot be reused) or "kept" (the connection went back to the
// pool before the answer was written).
type ClientWriteMetrics interface {
	ClientWriteFailed(server string)
}

func (s *Session) countClientWriteFailed(server string) {
	if m, ok := s.env.Metrics.(ClientWriteMetrics); ok {
		m.ClientWriteFailed(server)
	}
}

// clientWriteError is a failed write to the client during an attachment;
// any other error of pump is a failed read of the server.
type clientWriteError struct{ err error }

func (e *clientWriteError) Error() string { return "write to client: " + e.err.Error() }
func (e *clientWriteError) Unwrap() error { return e.err }

// attachmentFailed ends an attachment that failed: the client gone or not
// reading (its connection cannot be reused: the server may be mid-result),
// or the server lost (serverReadFailed tells the client).
func (s *Session) attachmentFailed(c *pooler.Conn, err error) {
	var we *clientWriteError
	if errors.As(err, &we) {
		s.clientWriteFailed(c, we.err)
		return
	}
	s.serverReadFailed(c, err)
}

// pump is pumpServer's loop; it returns an error instead of handling it.
func (s *Session) pump(c *pooler.Conn, inline bool) (pumpEnd, error) {
	conn := c.Value
	rd := conn.Reader
	stream := int(s.general().MessageSizeToBeStream)
	if stream <= 0 {
		stream = 1 << 20
	}
	transaction := s.pool.Settings().Mode() != "session"
	buf := getBuf()
	defer func() { putBuf(buf) }()
	smem := memlimit.NewAccount(s.env.Memory)
	defer func() { smem.Set(0) }()
	for {
		if len(*buf) > 0 && (rd.Buffered() == 0 || len(*buf) >= clientFlushThreshold) {
			if err := s.flushClient(buf); err != nil {
				return pumpFailed, &clientWriteError{err}
			}
		}
		typ, n, err := rd.PeekHeader()
		if err != nil {
			if s.woken(conn, buf) {
				continue
			}
			return pumpFailed, err
		}
		if s.params.n > 0 { // replies to the SETs put ahead of the client's messages
			if err := s.swallowParamReply(conn); err != nil && !s.woken(conn, buf) {
				return pumpFailed, err
			}
			continue
		}
		streamIt := n > stream
		if !streamIt && !reserveFor(&smem, rd, n) {
			// Over max_memory_usage: a message the pooler need not
			// inspect is streamed instead of buffered; one it must
			// inspect is read anyway (and counted).
			if !s.rewriting() || !answersRequest(typ) {
				streamIt = true
				s.memoryRefused("server", "streamed", n)
			}
		}
		if streamIt {
			if err := s.streamToClient(c, buf); err != nil {
				return pumpFailed, err
			}
			continue
		}
		f, err := rd.Next()
		smem.Set(grownSize(rd))
		if err != nil {
			if s.woken(conn, buf) {
				continue
			}
			return pumpFailed, err
		}
		switch {
		case s.rewriting() && (answersRequest(typ) || s.rw.fakesDue()):
			// Answers the pooler owes go before and right after this
			// message, in queue order.
			s.rewriteServerFrame(conn, typ, f, buf)
		case len(f) >= clientFlushThreshold:
			// A large frame goes out on its own, straight from the
			// reader's buffer.
			if err := s.flushClient(buf); err != nil {
				return pumpFailed, &clientWriteError{err}
			}
			if err := s.writeClient(f); err != nil {
				return pumpFailed, &clientWriteError{err}
			}
		default:
			*buf = append(*buf, f...)
		}
		switch typ {
		case protocol.MsgReadyForQuery:
			released, err := s.readyForQuery(c, protocol.ReadyForQueryStatus(f), buf, transaction, inline)
			switch {
			case err != nil:
				return pumpFailed, err
			case released:
				return pumpReleased, nil
			}
			if inline {
				switch s.answeredState() {
				case answeredInBlock:
					return pumpInBlock, nil
				case answeredPartial:
					return pumpYield, nil
				}
			}
		case protocol.MsgCopyInResponse, protocol.MsgCopyBothResponse:
			if inline {
				if err := s.flushClient(buf); err != nil {
					return pumpFailed, &clientWriteError{err}
				}
				return pumpYield, nil
			}
		default:
			s.noteServerMessage(conn, typ, f.Body())
		}
	}
}

// rewriteServerFrame appends to buf what the client gets of the server's
// message f: the answers the pooler owes before and right after it, in
// queue order, and f itself unless the rewriter hides it.
func (s *Session) rewriteServerFrame(conn *backend.Conn, typ byte, f protocol.Frame, buf *[]byte) {
	s.mu.Lock()
	*buf = s.rw.emitFakes(*buf)
	if !s.rw.Server(conn, typ, f.Body()) {
		*buf = append(*buf, f...)
	}
	*buf = s.rw.emitFakes(*buf)
	s.mu.Unlock()
}

// noteServerMessage records what a server message says about the
// connection: command tags that dirty it, parameters it reports (which the
// client is told too), a FATAL error that breaks it.
func (s *Session) noteServerMessage(conn *backend.Conn, typ byte, body []byte) {
	switch typ {
	case protocol.MsgCommandComplete:
		conn.NoteCommandTag(body)
	case protocol.MsgParameterStatus:
		conn.ApplyParameterStatus(body)
		s.noteParameterStatus(conn, body)
	case protocol.MsgErrorResponse:
		if isFatal(body) {
			conn.Broken = true
		}
	}
}

// answeredState says, after a ReadyForQuery that did not release, whether
// every Query, Sync and FunctionCall sent has had its ReadyForQuery, and
// if so whether extended-protocol messages were sent after the last Sync.
func (s *Session) answeredState() answered {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.pending > 0:
		return answeredNot
	case s.partial:
		return answeredPartial
	}
	return answeredInBlock
}

type answered int

const (
	answeredNot     answered = iota // more ReadyForQuery to come
	answeredPartial                 // all answered, messages after the last Sync
	answeredInBlock                 // all answered: idle in a transaction block
)

// readyForQuery handles one ReadyForQuery: it flushes everything to the
// client and, at the safe point, releases the connection (released).
//
// A transaction the client loop drives (inline) on a connection that
// needs no cleanup is released before its answer is written (handFirst),
// and when the pool hands the connection straight to a waiting client
// while more still wait, that client's goroutine runs first: it writes its
// request to the server, and only then is this client answered. Under a
// full pool the server then waits for the next request by one goroutine
// switch, not by the write to this client and the wake-up of its reader
// that the write causes. Only the goroutine that drives may do so:
// serverLoop's client loop could attach a server for a pipelined next
// request and answer it first.
func (s *Session) readyForQuery(c *pooler.Conn, status byte, buf *[]byte, transaction, inline bool) (released bool, err error) {
	conn := c.Value
	conn.TxStatus = status
	handFirst := inline && transaction && !conn.DirtySet && !conn.DirtyPrepare && !conn.DirtyCursor
	if !handFirst {
		if err := s.flushClient(buf); err != nil {
			return false, &clientWriteError{err}
		}
	}
	now := time.Since(s.ConnectedAt)
	s.mu.Lock()
	release := s.accountReadyLocked(conn, status, transaction, now)
	s.mu.Unlock()
	if !release {
		if handFirst {
			if err := s.flushClient(buf); err != nil {
				return false, &clientWriteError{err}
			}
		}
		return false, nil
	}
	s.pool.Stats.ClientsActive.Add(-1)
	backlog := s.giveBack(c)
	if !handFirst {
		return true, nil
	}
	if backlog {
		runtime.Gosched() // the waiter is next on this P (runnext)
	}
	// c belongs to the pool or to its next client now: only the client
	// socket is used from here on.
	if err := s.flushClient(buf); err != nil {
		// The server went back clean; the client is gone, and its next
		// read ends the session.
		s.countClientWriteFailed("kept")
		_ = s.nc.Close()
		s.logger().Debug("client write failed after the release", zap.Error(err))
	}
	return true, nil
}

// accountReadyLocked accounts one ReadyForQuery, under mu, at now (since
// ConnectedAt): the request it answers and, once every request is
// answered, the query's time. At the release point (transaction mode,
// safePoint, the session not closing) it also accounts the transaction and
// detaches conn: the session then holds no server, and the caller releases
// it. It reports whether it did.
func (s *Session) accountReadyLocked(conn *backend.Conn, status byte, transaction bool, now time.Duration) (release bool) {
	st := &s.pool.Stats
	if s.pending > 0 {
		s.pending--
	}
	if s.pending == 0 {
		st.QueryCount.Add(1)
		qt := now - s.queryStart
		st.QueryTime.Add(uint64(qt.Microseconds()))
		s.pool.QueryTimes.Observe(qt)
	}
	if !transaction || !safePoint(s.pending, s.partial, status) || s.closing {
		return false
	}
	s.srv, s.srvDone = nil, nil
	if s.rw != nil {
		s.rw.planSet = ""
	}
	if s.wake {
		// wakeIfFakeDue raced with the release: the interrupt is meant
		// for this session, not the connection's next user.
		s.wake = false
		_ = conn.NetConn().SetReadDeadline(time.Time{})
	}
	st.XactCount.Add(1)
	xt := now - s.xactStart
	st.XactTime.Add(uint64(xt.Microseconds()))
	s.pool.XactTimes.Observe(xt)
	// Under mu, so it cannot overwrite the state of the client's next
	// transaction (attach only starts after it sees srv == nil).
	s.state.Store(StateIdle)
	return true
}

// giveBack cleans a connection that served a client and returns it. It
// reports a backlog: a waiting client got c and more still wait.
func (s *Session) giveBack(c *pooler.Conn) (backlog bool) {
	// A cancel still in flight must hit neither the cleanup below nor the
	// connection's next client.
	s.cancels.Wait()
	conn := c.Value
	if conn.Broken {
		s.pool.Destroy(c)
		return false
	}
	set := s.pool.Settings()
	if conn.TxStatus != protocol.TxIdle {
		if err := s.execCleanup(c, "ROLLBACK"); err != nil {
			return false
		}
	}
	if set.DB.CleanupServerConnections {
		if q := cleanupQuery(set.Mode(), conn); q != "" {
			if err := s.execCleanup(c, q); err != nil {
				return false
			}
			if strings.Contains(q, "DEALLOCATE ALL") || strings.Contains(q, "DISCARD ALL") {
				conn.Prepared.Clear()
			}
		}
		conn.DirtySet, conn.DirtyPrepare, conn.DirtyCursor = false, false, false
	}
	conn.Reader.Shrink() // keep the 8 KiB buffer: one read syscall per reply, not two
	return s.pool.Release(c)
}

func (s *Session) execCleanup(c *pooler.Conn, q string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Value.Exec(ctx, q); err != nil {
		s.logger().Warn("server cleanup failed, closing server connection", zap.String("query", q), zap.Error(err))
		s.pool.Destroy(c)
		return err
	}
	return nil
}

// streamToClient forwards the next server message in chunks without
// buffering it whole, after everything gathered before it (answers the
// pooler owes included). A failed write is a *clientWriteError.
func (s *Session) streamToClient(c *pooler.Conn, buf *[]byte) error {
	if s.rw.fakesDue() {
		s.mu.Lock()
		*buf = s.rw.emitFakes(*buf)
		s.mu.Unlock()
	}
	if err := s.flushClient(buf); err != nil {
		return &clientWriteError{err}
	}
	rd := c.Value.Reader
	s.wmu.Lock()
	m, err := rd.ForwardFrame(s.nc)
	s.wmu.Unlock()
	s.pool.Stats.BytesSent.Add(uint64(m))
	if err != nil && !(rd.Buffered() == 0 && m == 0) {
		return &clientWriteError{err} // some of the frame went out: the client failed
	}
	return err
}

// writeClient writes one frame to the client under the write lock.
func (s *Session) writeClient(f []byte) error {
	s.wmu.Lock()
	n, err := s.nc.Write(f)
	s.wmu.Unlock()
	s.pool.Stats.BytesSent.Add(uint64(n))
	return err
}

func (s *Session) flushClient(buf *[]byte) error {
	if len(*buf) == 0 {
		return nil
	}
	s.wmu.Lock()
	n, err := s.nc.Write(*buf)
	s.wmu.Unlock()
	s.pool.Stats.BytesSent.Add(uint64(n))
	*buf = (*buf)[:0]
	return err
}

// serverReadFailed handles a dead server under a client, and the wake-up
// that detachOnExit causes when the client left first.
func (s *Session) serverReadFailed(c *pooler.Conn, err error) {
	s.mu.Lock()
	closing := s.closing
	clean := s.pending == 0 && !s.partial
	s.srv, s.srvDone = nil, nil
	s.resetQueueLocked()
	s.mu.Unlock()
	s.pool.Stats.ClientsActive.Add(-1)
	var ne net.Error
	if closing && errors.As(err, &ne) && ne.Timeout() && clean && c.Value.Reader.Buffered() == 0 {
		// The client left between transactions (session mode) or inside
		// one: roll back and clean, then the connection can serve others.
		_ = c.Value.NetConn().SetReadDeadline(time.Time{})
		s.giveBack(c)
		return
	}
	s.pool.Destroy(c)
	if closing {
		return
	}
	s.serverLost(c, err)
	s.Kill("08006", serverLostMessage)
}

// serverLostMessage is the FATAL a client gets when its server connection
// dies under it.
const serverLostMessage = "server connection closed unexpectedly: the server process was terminated or the network failed; the transaction state is unknown"

// serverLost counts and logs a server connection (destroyed by the
// caller) that died under the client. After a crash PostgreSQL restarts
// every backend, so the idle ones of this epoch are suspect too.
func (s *Session) serverLost(c *pooler.Conn, err error) {
	s.pool.Stats.ServerErrors.Add(1)
	s.pool.Conns().Reconnect()
	if s.env.Metrics != nil {
		s.env.Metrics.ServerLost(s.Database, s.User)
	}
	s.logger().Warn("server connection lost under a client", zap.Uint32("server_pid", c.Value.PID), zap.Error(err))
}

// clientWriteFailed: the client is gone or stopped reading. The server may
// be mid-result, so its connection cannot be reused.
func (s *Session) clientWriteFailed(c *pooler.Conn, err error) {
	s.mu.Lock()
	s.srv, s.srvDone = nil, nil
	s.resetQueueLocked()
	s.mu.Unlock()
	s.pool.Stats.ClientsActive.Add(-1)
	s.pool.Destroy(c)
	s.countClientWriteFailed("closed")
	_ = s.nc.Close()
	s.logger().Debug("client write failed, server connection closed", zap.Error(err))
}

func isFatal(body []byte) bool {
	// Severity field 'S' comes first in PostgreSQL's ErrorResponse.
	i := bytes.IndexByte(body, 'S')
	if i != 0 {
		return false
	}
	return bytes.HasPrefix(body[1:], []byte("FATAL")) || bytes.HasPrefix(body[1:], []byte("PANIC"))
}

// woken handles a read interrupted by wakeIfFakeDue: it emits the answers
// the pooler owes and reports that serverLoop should go on reading.
func (s *Session) woken(conn *backend.Conn, buf *[]byte) bool {
	s.mu.Lock()
	if !s.wake || s.closing {
		s.mu.Unlock()
		return false
	}
	s.wake = false
	*buf = s.rw.emitFakes(*buf)
	_ = conn.NetConn().SetReadDeadline(time.Time{})
	s.mu.Unlock()
	return s.flushClient(buf) == nil
}

func (s *Session) resetQueueLocked() {
	s.rw.detach()
	s.wake = false
}

// answersRequest reports whether a server message completes (or may
// complete) a queued request.
func answersRequest(typ byte) bool {
	switch typ {
	case protocol.MsgParseComplete, protocol.MsgBindComplete, protocol.MsgCloseComplete,
		protocol.MsgRowDescription, protocol.MsgNoData, protocol.MsgCommandComplete,
		protocol.MsgEmptyQueryResponse, protocol.MsgPortalSuspended, protocol.MsgErrorResponse,
		protocol.MsgReadyForQuery:
		return true
	}
	return false
}

// noteParameterStatus records what the client has now been told, and logs
// it where the pool's log_client_parameter_status_changes asks (a SET of a
// reported parameter, such as application_name or TimeZone, or a change
// the server reports by itself). The pooler's own SETs (parameter sync)
// never come here: their answers are kept from the client. Only the
// goroutine that reads the attached server calls it; the client loop reads
// the tracked values only between transactions.
func (s *Session) noteParameterStatus(conn *backend.Conn, body []byte) {
	var ps protocol.ParameterStatus
	if ps.Decode(body) != nil {
		return
	}
	s.tracked.putName(ps.Name, ps.Value)
	if s.pool != nil && s.pool.Settings().DB.LogClientParameterStatusChanges {
		s.logger().Info("client parameter changed", zap.String("name", ps.Name), zap.String("value", ps.Value), zap.Uint32("server_pid", conn.PID))
	}
}
