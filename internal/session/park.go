package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/idlepark"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// park hands the idle client to env.Parker and reports whether it did: the
// goroutine then ends, and resume continues the session in a new one when
// the client speaks, hangs up or is killed. TLS clients are not parked: a
// *tls.Conn may hold decrypted bytes the socket no longer shows.
//
// A deep park also gives up the net.Conn: the Parker gets a descriptor of
// its own (parkedSocket), and the net.Conn's poll descriptor, netFD and
// local address, most of what an idle client keeps besides the Session,
// go. Resuming from it costs more (net.FileConn and the socket options
// set again: about 25 µs more per resume on the hand rig), so only a
// client that has sent nothing in freshGrace after its welcome parks deep
// (peekClient): it pays that
// once, at its first query, and a driver's pool that opens connections
// ahead of use is where idle clients come from by the thousand. A client
// that has spoken parks with its net.Conn.
func (s *Session) park(ctx context.Context, deep bool) bool {
	pk := s.env.Parker
	if pk == nil || s.tls != nil || s.crd.Buffered() > 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Under mu, so that Kill either comes first (no park) or sees parked
	// and takes the socket back before it closes it.
	if s.killed || s.srv != nil || s.migrateTo != nil {
		return false
	}
	var ps *parkedSocket // nil: parked with its net.Conn
	if deep {
		var err error
		if ps, err = dupSocket(s.raw); err != nil {
			s.logger().Debug("client not parked deep", zap.Error(err))
			ps = nil
		}
	}
	var sc syscall.Conn
	if ps != nil {
		sc = ps
	} else if c, ok := s.raw.(syscall.Conn); ok {
		sc = c
	} else {
		return false
	}
	if err := pk.Park(sc, func(idlepark.WakeReason) { s.resume(ctx) }); err != nil {
		if ps != nil {
			ps.drop()
		}
		if !errors.Is(err, idlepark.ErrUnsupported) && !errors.Is(err, idlepark.ErrClosed) {
			s.logger().Debug("client not parked", zap.Error(err))
		}
		return false
	}
	if ps != nil {
		// The dup holds the socket open: this close neither ends the
		// connection nor applies SO_LINGER.
		_ = s.raw.Close()
		s.parkedDeep = true
	}
	s.parked = true
	// The wake may already run, but resume takes mu first: until we
	// return, the session is still ours. So that a parked client keeps
	// only what resuming needs, drop the Reader (its buffer is already
	// released) with its guard and account (clientRead, which holds the
	// error of the wait that ended in this park), a rewriter with nothing
	// in it and the rawio wrapper of the socket: nc is the socket itself
	// while parked, or the parkedSocket (raw too) when parked deep (set
	// under wmu too, because Write reads nc under it alone).
	if ps != nil {
		s.shedIdleLocked(ps)
	} else {
		s.shedIdleLocked(s.raw)
	}
	return true
}

// shedIdleLocked drops, under mu, what an idle client that no goroutine
// runs does not need: the Reader with its guard and account, a blank
// rewriter (rwParked says there was one) and the rawio wrapper of its
// socket; nc and raw become raw (under wmu too, because Write reads nc
// under it alone). rebuildLocked gives them back.
func (s *Session) shedIdleLocked(raw net.Conn) {
	if s.crd != nil {
		s.crd.Release() // its buffer back to the pool (nothing is buffered here)
	}
	s.crd = nil
	s.cmem.Set(0)
	s.clientRead = nil
	if s.rw != nil && s.rw.blank() {
		s.rw, s.rwParked = nil, true
	}
	s.wmu.Lock()
	s.nc, s.raw = raw, raw
	s.wmu.Unlock()
}

// reopenLocked makes the socket of a client parked deep (or held by the
// transaction core) a net.Conn again, with the configured TCP options
// (net.FileConn sets Go's own; SO_LINGER is the socket's: it stayed).
func (s *Session) reopenLocked(ps *parkedSocket) error {
	nc, err := ps.reopen()
	if err != nil {
		return err
	}
	if s.env.ConfigureSocket != nil {
		s.env.ConfigureSocket(nc)
	}
	s.raw = nc
	return nil
}

// rebuildLocked gives back, under mu, what shedIdleLocked dropped (a new
// rewriter is sized by the settings now in force).
func (s *Session) rebuildLocked() {
	s.wmu.Lock()
	s.nc = rawio.Wrap(s.raw)
	s.wmu.Unlock()
	s.clientRead = newClientRead(s.env, s.nc, s.general().ProxyCopyDataTimeout)
	s.crd = protocol.NewReader(&s.guard, 0, MaxClientMessage)
	if s.rwParked {
		s.rw = newRewriter(s.pool, s.User)
		s.rwParked = false
	}
}

// resume continues a parked session in the goroutine the Parker started.
// Whatever woke it (data, a hangup, Kill, the Parker closing), the next
// read of the client tells. It gives the session back what park dropped
// (a new rewriter is sized by the settings now in force).
func (s *Session) resume(ctx context.Context) {
	s.mu.Lock()
	s.parked = false
	s.adaptRelease()
	if ps, ok := s.raw.(*parkedSocket); ok {
		// Closed by Kill, which wrote the last word: the session ends.
		if err := s.reopenLocked(ps); err != nil {
			s.mu.Unlock()
			s.end(fmt.Errorf("resume parked client: %w: %w", errClientGone, err))
			return
		}
	}
	s.rebuildLocked()
	s.mu.Unlock()
	s.resumed = true
	s.end(s.run(ctx))
}

// maxReleaseShift bounds a client's release: idleRelease << 3 = 800 ms,
// and its park parkAfter times that, 3.2 s. A park and the resume after it
// cost far more than the transaction between them (a timer, two epoll
// calls, a goroutine start and thread wake-ups: docs/benchmarks-passes.md,
// "Fifth pass"), so a client that comes back soon after each park is
// parked later, doubling, up to this.
const maxReleaseShift = 3

// releaseBack: a client back this soon after its last transaction began
// is "back soon" for adaptRelease. Twice the longest wait before a park,
// so that a client at the bound, whose park comes up to 3.2 s after its
// last message, stays there when it comes back right after the park.
const releaseBack = 2 * parkAfter * idleRelease << maxReleaseShift

// setSlow sets slow, under mu so that Slow may read it from elsewhere;
// the client loop, its only writer, reads it without.
func (s *Session) setSlow(v bool) {
	s.mu.Lock()
	s.slow = v
	s.mu.Unlock()
}

// Slow reports whether the client's next wait between transactions starts
// without its read buffer (its last wait outlasted its release).
func (s *Session) Slow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slow
}

// parkable: the client can be handed to the Parker when idle (plaintext,
// and the daemon has one); the others wait in their goroutine.
func (s *Session) parkable() bool { return s.env.Parker != nil && s.tls == nil }

// adaptRelease runs at each resume, under mu: a client back within
// releaseBack of its last transaction's start is parked later next time
// (its release doubles, up to idleRelease << maxReleaseShift); one that
// stayed away longer is parked sooner (its release halves, down to
// idleRelease). A client that has had no transaction yet (parked fresh)
// keeps its release.
func (s *Session) adaptRelease() {
	switch {
	case s.xactStart == 0:
	case time.Since(s.ConnectedAt)-s.xactStart < releaseBack:
		s.releaseShift = min(s.releaseShift+1, maxReleaseShift)
	case s.releaseShift > 0:
		s.releaseShift--
	}
}

// IdleRelease is how long the client's next wait between transactions
// keeps its buffer, at most (adaptRelease); it is parked after parkAfter
// times that.
func (s *Session) IdleRelease() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return idleRelease << s.releaseShift
}
