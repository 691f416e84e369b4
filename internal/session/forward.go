package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/pool"
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
// when one is needed, and forward.
func (s *Session) run(ctx context.Context) error {
	s.crd = protocol.NewReader(s.nc, 0, MaxClientMessage)
	g := s.general()
	stream := int(g.MessageSizeToBeStream)
	if stream <= 0 {
		stream = 1 << 20
	}
	checkQuery := g.PoolerCheckQuery
	defer s.detachOnExit()
	var sbuf *[]byte
	for {
		srv := s.attached()
		if srv == nil && s.crd.Buffered() == 0 {
			s.state.Store(StateIdle)
		}
		typ, n, err := s.peekClient(srv == nil)
		if err != nil {
			return fmt.Errorf("read client: %w: %w", errClientGone, err)
		}
		if typ == protocol.MsgTerminate {
			return nil
		}
		var f protocol.Frame
		if n <= stream || (s.rewriting() && carriesStatementName(typ)) {
			if f, err = s.crd.Next(); err != nil {
				return fmt.Errorf("read client: %w: %w", errClientGone, err)
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
			return err
		}
		if srv == nil { // answered locally
			putBuf(sbuf)
			sbuf = nil
			continue
		}
		if f == nil { // large message: stream it
			if err := s.flushServer(srv, sbuf); err != nil {
				return err
			}
			m, err := s.crd.ForwardFrame(srv.Value.NetConn())
			s.pool.Stats.BytesReceived.Add(uint64(m))
			if err != nil {
				return s.serverWriteFailed(srv, err)
			}
			continue
		}
		if s.crd.Buffered() == 0 {
			if err := s.flushServer(srv, sbuf); err != nil {
				return err
			}
			putBuf(sbuf)
			sbuf = nil
			s.wakeIfFakeDue(srv)
		}
	}
}

// idleRelease is how long a client between transactions keeps its read
// buffer. A busy client reads each message with one syscall into the buffer
// it holds; one that stays quiet longer gives the buffer back, so idle
// clients cost no buffer (the next read then takes the 5-byte header first).
const idleRelease = 100 * time.Millisecond

// peekClient reads the next client message header. Between transactions it
// bounds the read by idleRelease and, when the client stays quiet, releases
// the read buffer and waits without one.
func (s *Session) peekClient(between bool) (byte, int, error) {
	if !between || s.crd.Buffered() > 0 || s.crd.Released() {
		return s.crd.PeekHeader()
	}
	s.crd.Shrink() // a buffer grown for a large message goes back now
	if s.crd.Released() {
		return s.crd.PeekHeader()
	}
	_ = s.nc.SetReadDeadline(time.Now().Add(idleRelease))
	typ, n, err := s.crd.PeekHeader()
	_ = s.nc.SetReadDeadline(zeroTime)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		return typ, n, err
	}
	s.crd.Release()
	return s.crd.PeekHeader()
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
		if srv, err = s.attach(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
	}
	s.accountLocked(typ)
	if f != nil {
		*sbuf = s.appendLocked(srv.Value, f, *sbuf)
	} else if s.rewriting() && expectsAnswer(typ) {
		s.push(request{kind: typ})
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
	if h := s.head(); h != nil && h.fake && s.srv == srv {
		s.wake = true
		_ = srv.Value.NetConn().SetReadDeadline(time.Unix(1, 0))
	}
}

func (s *Session) accountLocked(typ byte) {
	switch typ {
	case protocol.MsgQuery, protocol.MsgSync, protocol.MsgFunctionCall:
		if s.pending == 0 {
			s.queryStart = time.Now()
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

func (s *Session) flushServer(srv *pooler.Conn, b *[]byte) error {
	if len(*b) == 0 {
		return nil
	}
	n, err := srv.Value.Write(*b)
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
	_ = srv.Value.NetConn().Close()
	s.mu.Lock()
	done := s.srvDone
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	return fmt.Errorf("write to server: %w", err)
}

// attach acquires a server connection for the message typ the client just
// sent and starts its serverLoop.
func (s *Session) attach(ctx context.Context) (*pooler.Conn, error) {
	s.state.Store(StateWaiting)
	s.pool.Stats.ClientsActive.Add(1)
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		s.pool.Stats.ClientsActive.Add(-1)
		return nil, s.acquireFailed(err)
	}
	s.state.Store(StateActive)
	if s.pool.Settings().General.SyncServerParameters {
		if err := s.syncParams(ctx, c); err != nil {
			s.pool.Stats.ClientsActive.Add(-1)
			s.fatal("08006", "server connection failed while applying client parameters")
			return nil, err
		}
	}
	if err := s.reportRoleParams(c.Value); err != nil {
		s.pool.Release(c)
		s.pool.Stats.ClientsActive.Add(-1)
		return nil, err
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.srv = c
	s.srvDone = done
	s.xactStart = time.Now()
	s.unnamedHere = false
	s.mu.Unlock()
	go s.serverLoop(c, done)
	return c, nil
}

// roleParams are the server parameters that say what kind of server a
// client is on. They are re-sent whenever the backend a client lands on
// reports something else than the client was last told, so that
// target_session_attrs and read-only detection stay truthful after a
// failover, a fallback or a RECONNECT.
var roleParams = [...]string{"in_hot_standby", "default_transaction_read_only"}

func (s *Session) reportRoleParams(c *backend.Conn) error {
	var b []byte
	for _, k := range roleParams {
		v, ok := c.Params[k]
		if !ok || s.clientParams[k] == v {
			continue
		}
		s.clientParams[k] = v
		b = protocol.ParameterStatus{Name: k, Value: v}.Encode(b)
	}
	if b == nil {
		return nil
	}
	if err := s.Write(b); err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

func (s *Session) acquireFailed(err error) error {
	var se *backend.ServerError
	switch {
	case errors.Is(err, pooler.ErrWaitTimeout):
		s.fatal("08P01", "query_wait_timeout")
	case errors.Is(err, coordinator.ErrExhausted):
		s.fatal("53300", err.Error())
	case isFallbackFailure(err):
		s.fatal("08006", fallback.ClientMessage)
	case errors.Is(err, pool.ErrClosed):
		s.fatal("08P01", "pool is closed: database or user removed, or pg_doorman is shutting down")
	case errors.As(err, &se):
		s.fatal(se.Code, se.Message)
	case errors.Is(err, context.Canceled):
		s.fatal("58006", "pooler is shut down now")
	default:
		s.fatal("08006", "could not connect to server")
	}
	s.log.Warn("no server connection for client", zap.Error(err))
	return fmt.Errorf("acquire server: %w", err)
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
	s.mu.Unlock()
	if c == nil {
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

// syncedParams are the session parameters sync_server_parameters keeps
// equal to what the client set, on whichever server it lands.
var syncedParams = [...]string{"client_encoding", "DateStyle", "TimeZone", "standard_conforming_strings", "application_name"}

// syncParams sets on c the tracked parameters whose value differs from the
// client's, in one round trip before the client's transaction.
func (s *Session) syncParams(ctx context.Context, c *pooler.Conn) error {
	var q strings.Builder
	for _, k := range syncedParams {
		want, ok := s.clientParams[k]
		if !ok || c.Value.Params[k] == want {
			continue
		}
		fmt.Fprintf(&q, "SET %s TO '%s';", k, strings.ReplaceAll(want, "'", "''"))
	}
	if q.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Value.Exec(ctx, q.String()); err != nil {
		s.pool.Destroy(c)
		return fmt.Errorf("sync server parameters: %w", err)
	}
	return nil
}

// isFallbackFailure reports a failed Patroni-assisted fallback: the client
// gets the sanitized message, the details are in the log.
func isFallbackFailure(err error) bool {
	var re *fallback.RejectedError
	var de *fallback.DeadlineError
	return errors.As(err, &re) || errors.As(err, &de) || errors.Is(err, fallback.ErrNoCandidates)
}
