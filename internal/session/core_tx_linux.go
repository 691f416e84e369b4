//go:build linux

package session

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// One transaction in the core, in the order it happens: the client's
// bytes (clientEvent, clientBytes: run on an idle server, queued, or handed
// back), forwarded to the server (forward), the server's answer streamed
// to the client (serverEvent, readServer) and, at ReadyForQuery, the
// release rule (readyForQuery) that hands the server on (handOn,
// core_wait_linux.go).

func (c *Core) clientEvent(cl *coreClient, events uint32) {
	if events&unix.EPOLLOUT != 0 && !c.flush(&cl.end) {
		if cl.srv != nil {
			c.clientWriteFailed(cl)
		} else {
			c.endClient(cl, errClientGone)
		}
		return
	}
	if cl.queued {
		if events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
			// More bytes while it waits: they stay in the socket, and
			// the loop stops looking until a server is attached.
			c.setInterest(&cl.end, unix.EPOLLRDHUP)
			return
		}
		// Gone while it waits for a server: its statement is not run (as
		// attach's look after a long wait), however short the wait.
		s := cl.s
		c.dequeue(cl)
		s.pool.Stats.ClientsActive.Add(-1)
		s.pool.Stats.LeftWhileWaiting.Add(1)
		c.endClient(cl, fmt.Errorf("%w while waiting for a server", errClientGone))
		return
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		if !c.readClient(cl) {
			return
		}
	}
	c.refresh(cl)
}

// readClient reads the client once and handles the messages that lie
// whole in what it read; false: the client is no longer the loop's.
func (c *Core) readClient(cl *coreClient) bool {
	n, errno := rawio.ReadFD(uintptr(cl.end.fd), c.buf)
	if errno == unix.EAGAIN {
		return true
	}
	if errno != 0 || n == 0 {
		c.clientLost(cl)
		return false
	}
	c.readAgain(&cl.end, n)
	return c.clientBytes(cl, c.buf[:n])
}

// clientBytes handles client bytes: each whole message goes to the
// server; the first one the loop does not run (a message not whole in
// the read, a type that is not a request's, the first request of a
// transaction with no idle server) stops it, and the rest is held.
func (c *Core) clientBytes(cl *coreClient, data []byte) bool {
	s := cl.s
	if s.rwParked {
		s.mu.Lock()
		s.rw, s.rwParked = newRewriter(s.pool, s.User), false
		s.mu.Unlock()
	}
	for len(data) > 0 {
		if len(data) < protocol.HeaderLen {
			return c.stop(cl, data, whySplit)
		}
		typ := data[0]
		l := int(binary.BigEndian.Uint32(data[1:5]))
		if l < 4 || 1+l > len(data) {
			return c.stop(cl, data, whySplit) // the goroutine path reads it whole, streams it or refuses it
		}
		f := data[:1+l]
		if typ == protocol.MsgTerminate && len(f) == protocol.HeaderLen {
			c.endClient(cl, nil) // a server it holds goes back as detachOnExit decides
			return false
		}
		if _, _, ok := checkClientMessage(typ, len(f)); !ok {
			return c.stop(cl, data, whyMessage) // the goroutine path answers it
		}
		if cl.srv == nil {
			if typ == protocol.MsgQuery && s.checkQueryIs(f[5:]) {
				// pooler_check_query: answered without a server.
				cl.end.out = protocol.EmptyQueryResponse{}.Encode(cl.end.out)
				cl.end.out = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(cl.end.out)
				data = data[len(f):]
				continue
			}
			if s.rewriting() {
				// What the rewriter answers itself needs no server.
				var done bool
				if cl.end.out, done = s.localAnswer(protocol.Frame(f), len(data)-len(f), cl.end.out); done {
					data = data[len(f):]
					continue
				}
			}
			switch typ {
			case protocol.MsgQuery, protocol.MsgParse, protocol.MsgBind, protocol.MsgDescribe,
				protocol.MsgExecute, protocol.MsgSync, protocol.MsgClose, protocol.MsgFlush:
			default:
				return c.stop(cl, data, whyMessage) // FunctionCall, a COPY message out of a COPY
			}
			switch c.acquire(cl) {
			case queued:
				return c.hold(cl, data)
			case ended:
				return false
			case refused:
				return c.stop(cl, data, whyTLSServer)
			case noWait:
				return c.stop(cl, data, whyNoWait)
			}
		}
		c.forward(cl, typ, f)
		data = data[len(f):]
	}
	if cs := cl.srv; cs != nil && !c.flush(&cs.end) {
		c.serverFailed(cs, errors.New("write to server"))
		return false
	}
	if !c.flush(&cl.end) {
		if cl.srv != nil {
			c.clientWriteFailed(cl)
		} else {
			c.endClient(cl, errClientGone)
		}
		return false
	}
	return true
}

func (c *Core) forward(cl *coreClient, typ byte, f []byte) {
	s := cl.s
	out := &cl.srv.end.out
	s.mu.Lock()
	s.accountLocked(typ, c.now)
	if s.rw != nil {
		*out = s.rw.Client(cl.srv.pc.Value, protocol.Frame(f), *out)
	} else {
		*out = append(*out, f...)
	}
	s.mu.Unlock()
}

func (c *Core) serverEvent(cs *coreServer, events uint32) {
	cl := cs.cl
	if cl == nil {
		// Pooled, not lent here: what it says is for its next user.
		c.unregister(&cs.end)
		delete(c.servers, cs.pc)
		return
	}
	if events&unix.EPOLLOUT != 0 && !c.flush(&cs.end) {
		c.serverFailed(cs, errors.New("write to server"))
		return
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		if !c.readServer(cs) {
			return
		}
	}
	if cl.handBack && cs.sp.Between() && cl.srv == cs {
		held := cl.held
		cl.held = nil
		c.handBack(cl, held, nil, cl.why)
		return
	}
	c.refresh(cl)
}

// serverHold: what the pooler reads of a server message is held whole
// (the rewriter's answers, the replies to its SETs, command tags,
// parameters, errors and ReadyForQuery); anything else that spans reads is
// streamed.
func serverHold(s *Session) protocol.Hold {
	return func(typ byte, _ int) bool {
		switch typ {
		case protocol.MsgCommandComplete, protocol.MsgParameterStatus, protocol.MsgErrorResponse, protocol.MsgReadyForQuery:
			return true
		}
		return s.params.n > 0 || s.rewriting() && answersRequest(typ)
	}
}

func (c *Core) readServer(cs *coreServer) bool {
	cl := cs.cl
	n, errno := rawio.ReadFD(uintptr(cs.end.fd), c.buf)
	if errno == unix.EAGAIN {
		return true
	}
	if errno != 0 || n == 0 {
		c.serverFailed(cs, errors.New("server closed the connection"))
		return false
	}
	c.readAgain(&cs.end, n)
	data := c.buf[:n]
	s := cl.s
	conn := cs.pc.Value
	out := &cl.end.out
	for len(data) > 0 {
		p, rest, err := cs.sp.Next(data, cl.hold)
		if err != nil {
			c.serverFailed(cs, fmt.Errorf("server: %w", err))
			return false
		}
		data = rest
		switch p.Kind {
		case protocol.PieceNone:
			continue
		case protocol.PieceStream:
			if p.First && s.rewriting() && s.rw.fakesDue() {
				s.mu.Lock()
				*out = s.rw.emitFakes(*out)
				s.mu.Unlock()
			}
			*out = append(*out, p.Bytes...)
			continue
		}
		f := p.Frame()
		typ := p.Type
		if s.params.n > 0 {
			s.applyParamReply(conn, f)
			continue
		}
		if s.rewriting() && (answersRequest(typ) || s.rw.fakesDue()) {
			s.rewriteServerFrame(conn, typ, f, out)
		} else {
			*out = append(*out, f...)
		}
		if typ != protocol.MsgReadyForQuery {
			s.noteServerMessage(conn, typ, f.Body())
			continue
		}
		if c.readyForQuery(cl, cs, protocol.ReadyForQueryStatus(f), len(data) > 0) {
			// Released before the client is answered: a client that
			// cannot take the answer leaves a clean server behind.
			if cl.dead || !c.flush(&cl.end) {
				s.countClientWriteFailed("kept")
				c.endClient(cl, errClientGone)
				return false
			}
			c.afterRelease(cl)
			return false
		}
	}
	if cl.dead {
		if len(cl.end.out) > 0 {
			// An answer began for a client that is gone.
			c.clientWriteFailed(cl)
			return false
		}
		return true
	}
	if !c.flush(&cl.end) {
		c.clientWriteFailed(cl)
		return false
	}
	return true
}

// readyForQuery accounts a ReadyForQuery and, at the safe point, releases
// the server (true). more: the server sent bytes after it.
func (c *Core) readyForQuery(cl *coreClient, cs *coreServer, status byte, more bool) bool {
	s := cl.s
	conn := cs.pc.Value
	conn.TxStatus = status
	now := s.sinceConnected(c.now)
	s.mu.Lock()
	release := s.accountReadyLocked(conn, status, true, now)
	cancels := s.cancelsInFlight
	s.mu.Unlock()
	if !release {
		return false
	}
	s.pool.Stats.ClientsActive.Add(-1)
	cs.cl, cl.srv = nil, nil
	pc := cs.pc
	set := s.pool.Settings()
	switch {
	case more || len(cs.end.out) > 0 || conn.Broken:
		// Bytes past the release point: not a clean connection.
		delete(c.servers, pc)
		c.unregister(&cs.end)
		s.pool.Destroy(pc)
	case cancels > 0 || status != protocol.TxIdle || set.DB.CleanupServerConnections && (conn.DirtySet || conn.DirtyPrepare || conn.DirtyCursor):
		// A cancel in flight, or a cleanup to run: giveBack waits, off the
		// loop. The server leaves the set: a goroutine reads it now.
		delete(c.servers, pc)
		c.unregister(&cs.end)
		go s.giveBack(pc)
	default:
		c.handOn(s.pool, pc)
	}
	return true
}

// afterRelease: the client is idle again; a Migrate, or client bytes to
// hand back, wait for this point.
func (c *Core) afterRelease(cl *coreClient) {
	if cl.gone {
		return
	}
	if cl.handBack || cl.s.migrating.Load() {
		why := cl.why
		if !cl.handBack {
			why = whyMigrate
		}
		held := cl.held
		cl.held = nil
		c.handBack(cl, held, nil, why)
		return
	}
	c.refresh(cl)
}

// checkQueryIs reports whether a Query's body is pooler_check_query.
func (s *Session) checkQueryIs(body []byte) bool {
	cq := s.general().PoolerCheckQuery
	return cq != "" && isCheckQuery(body, cq)
}
