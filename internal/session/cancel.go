package session

// Cancel requests: forwarded to the server a client has, or, while the
// client waits for one, answered here for the statement not yet sent.

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
)

// CancelMetrics is implemented by Env.Metrics hooks that count what
// became of cancel requests: "forwarded", "answered" (a waiting client's
// statement cancelled here), "failed", "nothing" (no server to cancel on)
// and "unknown" (no client with the key).
type CancelMetrics interface {
	CancelRequest(result string)
}

func (s *Session) countCancel(result string) {
	if m, ok := s.env.Metrics.(CancelMetrics); ok {
		m.CancelRequest(result)
	}
}

// forwardCancel acts on a cancel request for the session with its key.
func (s *Session) forwardCancel(ctx context.Context, m *protocol.CancelRequest) {
	target := s.env.Clients.byCancelKey(m.ProcessID, m.SecretKey)
	if target == nil {
		s.countCancel("unknown")
		return
	}
	target.mu.Lock()
	if target.srv == nil && target.stopWaitLocked() {
		// Waiting for a server: nothing was sent, the statement is
		// cancelled here (answerCanceled).
		target.mu.Unlock()
		s.countCancel("answered")
		return
	}
	var srv *backend.Conn
	if target.srv != nil && !target.closing {
		// A client that is gone has nothing to cancel: its server is
		// rolled back or destroyed anyway. Otherwise the target must not
		// give the server to another client before this cancel has been
		// delivered, or the cancel would hit that client's statement.
		srv = target.srv.Value
		target.cancels.Add(1)
		target.cancelsInFlight++
	}
	target.mu.Unlock()
	if srv == nil {
		s.countCancel("nothing")
		return
	}
	defer func() {
		target.mu.Lock()
		target.cancelsInFlight--
		target.mu.Unlock()
		target.cancels.Done()
	}()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := srv.Cancel(ctx); err != nil {
		s.countCancel("failed")
		s.logger().Warn("cancel request failed", zap.Error(err))
		return
	}
	s.countCancel("forwarded")
}

// waitHook is the Session as the pool's Waiter: while the client waits
// for a server, its cancel request stops the wait (forwardCancel).
type waitHook Session

func (h *waitHook) Waiting() <-chan struct{} {
	s := (*Session)(h)
	s.mu.Lock()
	if s.waitStop == nil {
		s.waitStop = make(chan struct{}, 1)
	}
	s.waiting = true
	s.xactStart = s.sinceConnected(time.Time{}) // the wait's start until bindServer (RequestTimes)
	stop := s.waitStop
	s.mu.Unlock()
	return stop
}

// stopWaitLocked stops the client's wait for a server, if it waits. It
// sends under mu: DoneWaiting drains under mu, so no stop outlives the
// wait it was meant for.
func (s *Session) stopWaitLocked() bool {
	if !s.waiting {
		return false
	}
	s.waiting = false
	if cl := s.coreLocked(); cl != nil {
		// Queued in the transaction core: the loop answers it.
		s.env.Core.post(corePost{kind: postCancel, cl: cl})
		return true
	}
	select {
	case s.waitStop <- struct{}{}:
	default:
	}
	return true
}

func (h *waitHook) DoneWaiting(queued bool, wait time.Duration) {
	s := (*Session)(h)
	s.lastWait = classifyWait(queued, wait) // called by Acquire in the client loop's goroutine
	s.mu.Lock()
	s.waiting = false
	select {
	case <-s.waitStop: // a stop that came too late for the wait
	default:
	}
	s.mu.Unlock()
}

// answerCanceled answers a request whose wait for a server the client's
// cancel request stopped, as PostgreSQL answers a cancelled statement:
// 57014, then ReadyForQuery for a simple query, a function call or a
// Sync; any other extended-protocol message skips to its Sync. The frame
// is dropped first if it was not read (a message to be streamed).
func (s *Session) answerCanceled(typ byte, unread bool, frameLen int) error {
	if unread {
		if err := s.discardFrame(frameLen); err != nil {
			return s.clientReadError(err)
		}
	}
	b := protocol.AppendError(nil, "ERROR", "57014", pooler.ErrCanceled.Error())
	switch typ {
	case protocol.MsgQuery, protocol.MsgFunctionCall, protocol.MsgSync:
		b = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(b)
	default:
		s.skipToSync = true
	}
	return s.Write(b)
}
