//go:build linux

package session

import (
	"errors"
	"fmt"

	"github.com/doorman-go/doorman/internal/protocol"
)

// The transaction core's hand-back: what the loop does not run goes
// back to a goroutine (resumeFromCore) with the bytes it read, where the
// server is between messages.

// handBackReason is why the core handed a client back (CoreMetrics).
type handBackReason uint8

const (
	whySplit handBackReason = iota
	whyMessage
	whyCanceled
	whyMigrate
	whyTLSServer
	whyNoWait
)

func (r handBackReason) String() string {
	return [...]string{"split_message", "message", "canceled", "migrate", "tls_server", "no_wait"}[r]
}

// stop ends the loop's part in the session: what is left of the read goes
// back to a goroutine with it, now when no server is attached or the
// server is between messages, else once it is.
func (c *Core) stop(cl *coreClient, rest []byte, why handBackReason) bool {
	if cs := cl.srv; cs != nil {
		if !c.flush(&cs.end) {
			c.serverFailed(cs, errors.New("write to server"))
			return false
		}
		if cs.sp != nil && !cs.sp.Between() {
			cl.held = append(cl.held, rest...)
			cl.handBack, cl.why = true, why
			c.refresh(cl)
			return false
		}
	}
	c.handBack(cl, rest, nil, why)
	return false
}

// handBack gives the session back to a goroutine: unread is what the loop
// read and did not handle, then (may be nil) runs first there. An attached
// server goes with it, between messages.
func (c *Core) handBack(cl *coreClient, unread []byte, then func(*Session) error, why handBackReason) {
	if cl.gone {
		return
	}
	if c.metrics != nil {
		c.metrics.CoreHandBack(why.String())
	}
	cl.gone = true
	delete(c.clients, cl)
	c.unregister(&cl.end)
	var toServer []byte
	if cs := cl.srv; cs != nil {
		delete(c.servers, cs.pc)
		c.unregister(&cs.end)
		toServer = cs.end.out
		cs.cl, cl.srv = nil, nil
	}
	toClient := cl.end.out
	cl.end.fd = -1
	unread = append([]byte(nil), unread...)
	go cl.s.resumeFromCore(cl, unread, toClient, toServer, then)
}

// resumeFromCore continues, in a goroutine, a session the core handed
// back: the socket becomes a net.Conn again, what the core had for the
// client and the server is written, unread is read first.
func (s *Session) resumeFromCore(cl *coreClient, unread, toClient, toServer []byte, then func(*Session) error) {
	s.mu.Lock()
	cl.ps.cl = nil
	if s.killed {
		k := cl.kill
		s.mu.Unlock()
		_, _ = cl.ps.Write(toClient)
		if k != nil {
			_, _ = cl.ps.Write(protocol.AppendError(nil, "FATAL", k.Code, k.Message))
		}
		_ = cl.ps.Close()
		s.detachOnExit()
		s.end(errors.New("killed"))
		return
	}
	if err := s.reopenLocked(&cl.ps.parkedSocket); err != nil {
		s.mu.Unlock()
		s.detachOnExit()
		s.end(fmt.Errorf("resume client from the transaction core: %w: %w", errClientGone, err))
		return
	}
	s.rebuildLocked()
	s.crd.Prime(unread)
	srv := s.srv
	pending := s.pending > 0 || s.partial // answers, or messages after the last Sync, are due
	s.mu.Unlock()
	if len(toClient) > 0 {
		if err := s.Write(toClient); err != nil {
			s.detachOnExit()
			s.end(fmt.Errorf("write client: %w: %w", errClientGone, err))
			return
		}
	}
	if srv != nil {
		b := toServer
		if err := s.flushServer(srv, &b); err != nil {
			s.detachOnExit()
			s.end(err)
			return
		}
		if pending {
			s.watch(srv) // serverLoop reads what the server says
		}
	}
	if then != nil {
		if err := then(s); err != nil {
			s.detachOnExit()
			s.end(err)
			return
		}
	}
	s.resumed = len(unread) > 0
	s.end(s.run(cl.ctx))
}

// answerCanceledHeld answers a request whose wait the client's cancel
// stopped (answerCanceled), with the request already in the Reader.
func (s *Session) answerCanceledHeld() error {
	typ, n, err := s.crd.PeekHeader()
	if err != nil {
		return s.clientReadError(err)
	}
	if err := s.discardFrame(n); err != nil {
		return s.clientReadError(err)
	}
	return s.answerCanceled(typ, false, n)
}
