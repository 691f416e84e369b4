package session

import (
	"context"
	"errors"

	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
	"github.com/doorman-go/doorman/internal/txloop"
)

// loopMember is the session as a member of its loop: Event runs on the
// loop's goroutine.
type loopMember Session

// mayLoop reports whether the client may wait for its next request on a
// loop (see loop.go); the client loop asks when it is about to wait.
func (s *Session) mayLoop() bool {
	if len(s.env.Loops) == 0 || s.tls != nil || s.Admin || s.skipToSync || s.migrating.Load() {
		return false
	}
	if rc, ok := s.nc.(*rawio.Conn); !ok || !rc.Socket() {
		return false
	}
	set := s.pool.Settings()
	return set.Mode() != "session" && !loopServerTLS(set.General.ServerTLSMode)
}

// enterLoop hands the session to its loop and reports whether it did: the
// goroutine must then return without touching the session (errParked).
// The client has sent nothing unread; a server attached is idle in a
// transaction block with everything answered.
func (s *Session) enterLoop(ctx context.Context) bool {
	l := s.env.Loops.For(s.ID)
	cfd := -1
	if rawio.Control(s.raw, func(fd uintptr) { cfd = int(fd) }) != nil {
		return false
	}
	if s.lp == nil {
		s.lp = &looping{srv: fdSource{fd: -1}}
	}
	lp := s.lp
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.srv
	if s.killed || s.migrateTo != nil || s.srvDone != nil {
		return false
	}
	if c != nil && (s.pending > 0 || s.partial || s.params.n > 0) {
		return false
	}
	sfd := -1
	if c != nil {
		if sfd = c.Value.FD(); sfd < 0 {
			return false
		}
	}
	lp.loop, lp.ctx, lp.cli.fd = l, ctx, cfd
	lp.driving, lp.clientEdge = false, false
	// The server first, the client last: once the client's descriptor is
	// in the set its event may run the session on the loop at once.
	if c != nil {
		if err := l.Add(sfd, (*loopMember)(s)); err != nil {
			return false
		}
		lp.srv.fd = sfd
		c.Value.Reader.SetSource(&lp.srv)
	}
	s.guard.idleClear()
	s.crd.Release()
	s.crd.SetSource(&lp.cli)
	// Under mu, so that Kill and Migrate see either a session that is not
	// looped (and act as always) or one the loop holds (and Kick it).
	s.looped = true
	if err := l.Add(cfd, (*loopMember)(s)); err != nil {
		s.looped = false
		s.crd.SetSource(&s.guard)
		if c != nil {
			l.Del(sfd)
			lp.srv.fd = -1
			c.Value.Reader.SetSource(c.Value.NetConn())
		}
		return false
	}
	return true
}

// kickLoop asks the loop to hand the session back to a goroutine. Called
// with mu held and looped true.
func (s *Session) kickLoop() {
	m := (*loopMember)(s)
	// False when the loop closes: it then hands back every member itself.
	s.lp.loop.Kick(m.kicked)
}

func (m *loopMember) kicked() {
	s := (*Session)(m)
	s.mu.Lock()
	in := s.looped
	s.mu.Unlock()
	if in {
		s.leaveLoop()
	}
}

// Event is a readable (or closed) descriptor of the session's.
func (m *loopMember) Event(fd int, events uint32) {
	s := (*Session)(m)
	lp := s.lp
	switch {
	case events == txloop.Closed:
		s.leaveLoop()
	case fd == lp.cli.fd:
		if lp.driving {
			lp.clientEdge = true
			return
		}
		s.loopClient()
	case fd == lp.srv.fd && lp.driving:
		s.loopServer()
	}
	// The server speaking while idle in a block is read with the answer
	// to the next request, as the goroutine path does.
}

// loopClient reads the client and runs its request, or leaves the loop.
func (s *Session) loopClient() {
	lp := s.lp
	crd := s.crd
	_, err := crd.ReadSome()
	switch {
	case errors.Is(err, errWouldBlock):
		if crd.Buffered() == 0 {
			crd.Release()
		}
		return
	case err != nil || crd.Free() == 0:
		// An error (an end of stream too), or a read that filled the
		// buffer: what follows is the goroutine path's to read, before it
		// waits (or it would hand the session straight back to the loop).
		s.resumed = true
		s.leaveLoop()
		return
	}
	c := s.srv
	frames, ok := loopRequest(crd.Unread(), c == nil, s.rewriting(), s.general().PoolerCheckQuery)
	if !ok {
		s.leaveLoop()
		return
	}
	if c == nil {
		if c = s.loopAttach(); c == nil {
			s.leaveLoop()
			return
		}
	}
	sbuf := getBuf()
	s.mu.Lock()
	for range frames {
		f, _ := crd.Next() // whole and buffered: no read
		s.accountLocked(f.Type())
		*sbuf = s.rw.Client(c.Value, f, *sbuf)
	}
	s.mu.Unlock()
	if crd.Buffered() == 0 {
		crd.Release()
	}
	lp.driving = true
	n, e := rawio.WriteFD(uintptr(lp.srv.fd), *sbuf)
	if e != 0 {
		n = 0
	}
	s.pool.Stats.BytesReceived.Add(uint64(n))
	if n < len(*sbuf) {
		*sbuf = append((*sbuf)[:0], (*sbuf)[n:]...)
		s.leaveLoopWith(loopExit{write: sbuf})
		return
	}
	putBuf(sbuf)
	// The answer's bytes make the server's descriptor readable: Event.
}

// loopAttach takes an idle server for the request the loop runs, as attach
// does, or returns nil (none idle at once, or one the loop cannot run:
// TLS, parameters to SET first).
func (s *Session) loopAttach() *pooler.Conn {
	lp := s.lp
	c := s.pool.TryAcquire(lp.ctx)
	if c == nil {
		return nil
	}
	sfd := c.Value.FD()
	if sfd < 0 || !s.paramsInSync(c.Value) {
		s.pool.Release(c)
		return nil
	}
	if err := s.lp.loop.Add(sfd, (*loopMember)(s)); err != nil {
		s.pool.Release(c)
		return nil
	}
	lp.srv.fd = sfd
	c.Value.Reader.SetSource(&lp.srv)
	s.pool.Stats.ClientsActive.Add(1)
	s.state.Store(StateActive)
	s.params.n, s.params.head, s.params.err = 0, 0, nil
	s.bindServer(c)
	return c
}

// loopServer reads the server's answer as far as it has come.
func (s *Session) loopServer() {
	lp := s.lp
	c := s.srv
	conn := c.Value
	rd := conn.Reader
	if lp.out == nil {
		lp.out = getBuf()
	}
	out := lp.out
	for {
		typ, n, err := rd.PeekHeader()
		if errors.Is(err, errWouldBlock) {
			if !s.loopFlush() {
				s.leaveLoop()
			}
			return
		}
		if err != nil || n > protocol.DefaultBufferSize || s.params.n > 0 {
			s.leaveLoop()
			return
		}
		f, err := rd.Next()
		if errors.Is(err, errWouldBlock) { // the rest of the message is on its way
			if !s.loopFlush() {
				s.leaveLoop()
			}
			return
		}
		if err != nil {
			s.leaveLoop()
			return
		}
		if s.rewriting() && (answersRequest(typ) || s.rw.fakesDue()) {
			s.rewriteServerFrame(conn, typ, f, out)
		} else {
			*out = append(*out, f...)
		}
		switch typ {
		case protocol.MsgReadyForQuery:
			s.loopReady(c, protocol.ReadyForQueryStatus(f))
			return
		case protocol.MsgCopyInResponse, protocol.MsgCopyBothResponse:
			s.leaveLoopWith(loopExit{driving: true, yield: true})
			return
		default:
			s.noteServerMessage(conn, typ, f.Body())
		}
		if len(*out) >= clientFlushThreshold && !s.loopFlush() {
			s.leaveLoop()
			return
		}
	}
}

// loopReady handles a ReadyForQuery the loop read: the answer goes to the
// client and, at the safe point, the server back to the pool, as
// readyForQuery does; the session stays on the loop unless the server
// must be cleaned first or more is to come that the loop does not run.
func (s *Session) loopReady(c *pooler.Conn, status byte) {
	lp := s.lp
	if !s.loopFlush() {
		s.leaveLoopWith(loopExit{driving: true, ready: status})
		return
	}
	s.mu.Lock()
	release := safePoint(max(s.pending-1, 0), s.partial, status) && !s.closing
	s.mu.Unlock()
	if release {
		if conn := c.Value; conn.Broken || (s.pool.Settings().DB.CleanupServerConnections && (conn.DirtySet || conn.DirtyPrepare || conn.DirtyCursor)) {
			// giveBack would talk to the server: the goroutine path's.
			s.leaveLoopWith(loopExit{driving: true, ready: status})
			return
		}
		// Out of the set and back on its own source before the pool may
		// hand it to someone else.
		s.lp.loop.Del(lp.srv.fd)
		lp.srv.fd = -1
		c.Value.Reader.SetSource(c.Value.NetConn())
	}
	released, _ := s.readyForQuery(c, status, lp.out, true) // lp.out is empty: no write, no error
	putBuf(lp.out)
	lp.out = nil
	lp.driving = false
	switch {
	case release != released:
		s.leaveLoop() // cannot happen: the goroutine path sorts it out
		return
	case !released:
		switch s.answeredState() {
		case answeredNot:
			lp.driving = true // more ReadyForQuery to come
			lp.out = getBuf()
			s.loopServer()
			return
		case answeredPartial:
			s.leaveLoopWith(loopExit{driving: true, yield: true})
			return
		}
	}
	if lp.clientEdge || s.crd.Buffered() > 0 {
		lp.clientEdge = false
		s.loopClient()
	}
}

// loopFlush writes what the loop holds for the client without waiting and
// reports whether all of it went; the rest stays in lp.out.
func (s *Session) loopFlush() bool {
	out := s.lp.out
	if out == nil || len(*out) == 0 {
		return true
	}
	s.wmu.Lock()
	n, e := rawio.WriteFD(uintptr(s.lp.cli.fd), *out)
	s.wmu.Unlock()
	if e != 0 {
		n = 0
	}
	s.pool.Stats.BytesSent.Add(uint64(n))
	if n == len(*out) {
		*out = (*out)[:0]
		return true
	}
	*out = append((*out)[:0], (*out)[n:]...)
	return false
}

// leaveLoop hands the session back to a goroutine with what the loop had
// in hand.
func (s *Session) leaveLoop() {
	lp := s.lp
	s.leaveLoopWith(loopExit{driving: lp.driving})
}

// leaveLoopWith takes the session's descriptors out of the loop, gives the
// Readers their blocking sources back and continues the session in a new
// goroutine (afterLoop) with k, plus the bytes for the client the loop
// still holds.
func (s *Session) leaveLoopWith(k loopExit) {
	lp := s.lp
	s.lp.loop.Del(lp.cli.fd)
	if lp.srv.fd >= 0 {
		s.lp.loop.Del(lp.srv.fd)
		lp.srv.fd = -1
	}
	s.crd.SetSource(&s.guard)
	if c := s.srv; c != nil {
		c.Value.Reader.SetSource(c.Value.NetConn())
	}
	if k.driving {
		k.out = lp.out
	} else if lp.out != nil {
		putBuf(lp.out)
	}
	lp.out = nil
	lp.driving, lp.clientEdge = false, false
	ctx := lp.ctx
	lp.ctx = nil
	s.mu.Lock()
	s.looped = false
	kr := lp.killReq
	lp.killReq = nil
	s.mu.Unlock()
	go s.afterLoop(ctx, k, kr)
}
