//go:build linux

package session

import (
	"errors"
	"fmt"

	"github.com/doorman-go/doorman/internal/protocol"
)

// How a client or a server leaves the core: a client that hangs up
// (clientLost) or cannot be written to (clientWriteFailed), a server that
// fails (serverFailed), Kill (killCoreLocked, kill), and the one end of
// every session the loop owns (endClient).

// killCoreLocked is Kill for a session the core owns, under s.mu.
func (s *Session) killCoreLocked(cl *coreClient, code, msg string) {
	cl.kill = &protocol.Notice{Severity: "FATAL", Code: code, Message: msg}
	s.env.Core.post(corePost{kind: postKill, cl: cl})
}

// clientLost: the client hung up or reset. With answers still due from
// its server, the server is kept until they come: if the transaction ends
// there, the server goes back clean, as the goroutine path, which notices
// the client only when the answer cannot be written, gives it back before
// that write (readyForQuery); if an answer begins that does not end in
// the same read, the server is closed.
func (c *Core) clientLost(cl *coreClient) {
	s := cl.s
	if cl.srv != nil {
		s.mu.Lock()
		due := s.pending > 0
		s.mu.Unlock()
		if due {
			cl.dead = true
			c.unregister(&cl.end)
			cl.end.out = nil
			return
		}
	}
	c.endClient(cl, errClientGone)
}

// clientWriteFailed: a write to the client failed while its server was
// attached; the server is closed, and counted so.
func (c *Core) clientWriteFailed(cl *coreClient) {
	cl.s.countClientWriteFailed("closed")
	c.endClient(cl, errClientGone)
}

func (c *Core) serverFailed(cs *coreServer, err error) {
	cl := cs.cl
	delete(c.servers, cs.pc)
	c.unregister(&cs.end)
	cs.end.fd = -1
	if cl == nil {
		return
	}
	s := cl.s
	s.mu.Lock()
	s.srv = nil
	s.resetQueueLocked()
	s.mu.Unlock()
	cs.cl, cl.srv = nil, nil
	s.pool.Stats.ClientsActive.Add(-1)
	s.pool.Destroy(cs.pc)
	s.serverLost(cs.pc, err)
	_ = c.flush(&cl.end)
	_, _ = cl.ps.Write(protocol.AppendError(nil, "FATAL", "08006", serverLostMessage))
	c.endClient(cl, fmt.Errorf("server: %w", err))
}

// kill: Kill's last word, and the end; a server in use is destroyed.
func (c *Core) kill(cl *coreClient) {
	if cl.gone {
		return
	}
	s := cl.s
	s.mu.Lock()
	k := cl.kill
	s.mu.Unlock()
	if k == nil {
		return
	}
	_ = c.flush(&cl.end)
	_, _ = cl.ps.Write(protocol.AppendError(nil, "FATAL", k.Code, k.Message))
	c.endClient(cl, errors.New("killed"))
}

// endClient ends the session: a server it holds goes back clean or is
// destroyed, and the socket is closed off the loop (end).
func (c *Core) endClient(cl *coreClient, err error) {
	if cl.gone {
		return
	}
	cl.gone = true
	delete(c.clients, cl)
	s := cl.s
	c.unregister(&cl.end)
	if cl.queued {
		c.dequeue(cl)
		s.pool.Stats.ClientsActive.Add(-1)
	}
	if cs := cl.srv; cs != nil {
		cs.cl, cl.srv = nil, nil
		s.mu.Lock()
		// As detachOnExit: everything answered, so rolled back and reused.
		ok := s.pending == 0 && !s.partial && s.params.n == 0 && cs.sp.Between() && len(cs.end.out) == 0
		s.srv = nil
		s.resetQueueLocked()
		s.mu.Unlock()
		s.pool.Stats.ClientsActive.Add(-1)
		delete(c.servers, cs.pc)
		c.unregister(&cs.end)
		if ok {
			go s.giveBack(cs.pc)
		} else {
			s.pool.Destroy(cs.pc)
		}
	}
	cl.end.fd = -1
	s.mu.Lock()
	cl.ps.cl = nil
	s.mu.Unlock()
	go s.end(err) // closes the socket; logging and the registry off the loop
}
