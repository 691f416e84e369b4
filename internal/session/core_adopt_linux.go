//go:build linux

package session

import (
	"context"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/fdconn"
	"github.com/doorman-go/doorman/internal/rawio"
)

// A session enters the transaction core here: adoptCore at its idle
// point, Core.add without waking the loop, and the loop's takeAdds before
// each batch and with its posts.

// adoptCore hands the idle session to the core and reports whether it
// did; the goroutine that ran it then returns errParked and touches
// nothing more. Under the same conditions as a deep park, and only where
// the core runs everything the session may do next: plaintext, transaction
// mode, plaintext servers.
func (s *Session) adoptCore(ctx context.Context) bool {
	if !s.coreMayAdopt() || s.crd.Buffered() > 0 || s.skipToSync || s.migrating.Load() {
		return false
	}
	c := s.env.Core
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed || s.srv != nil || s.migrateTo != nil {
		return false
	}
	fd, err := takeSocket(s.raw)
	if err != nil {
		return false
	}
	ps := &coreSocket{parkedSocket: parkedSocket{fd: fd}}
	cl := &coreClient{s: s, ctx: ctx, ps: ps}
	ps.cl = cl
	cl.end = coreEnd{fd: ps.fd, cl: cl}
	s.parkedDeep = true
	s.shedIdleLocked(ps) // as a park; the rewriter comes back in clientBytes
	s.state.Store(StateIdle)
	// Last: from the add on, the loop may run the session.
	if !c.add(cl) {
		// The core has stopped (shutdown): the session ends.
		go s.end(errCoreClosed)
	}
	return true
}

// coreMayAdopt reports whether the core runs everything this session may
// do: a core whose loop runs, plaintext, transaction mode, plaintext
// servers. What may change (buffered input, a migration) adoptCore asks
// at the idle point.
func (s *Session) coreMayAdopt() bool {
	c := s.env.Core
	if c == nil || c.ended.Load() || s.tls != nil || s.Admin || !s.transactionMode() {
		return false
	}
	_, tls := c.tlsPools.Load(s.pool)
	return !tls
}

// takeSocket hands the descriptor of the client's socket to the core: a
// socket of internal/fdconn leaves its Poller without a system call of
// its own, another is dupped and closed (the dup holds it open). Called
// under mu.
func takeSocket(raw net.Conn) (int, error) {
	if fc, ok := raw.(*fdconn.Conn); ok {
		return fc.Detach()
	}
	fd, err := rawio.DupFD(raw)
	if err != nil {
		return -1, err
	}
	_ = raw.Close()
	return fd, nil
}

// errCoreClosed ends a session the stopped core could not take.
var errCoreClosed = errors.New("transaction core closed")

// coreClientEvents is what the set waits for on an idle client.
const coreClientEvents = unix.EPOLLIN | unix.EPOLLRDHUP

// coreAdd is an adopted client whose socket add put in the set, with
// what that registration returned.
type coreAdd struct {
	cl  *coreClient
	err error
}

// add hands an adopted client to the loop without waking it: its socket
// goes into the set here, and the loop takes the client (takeAdds) before
// it looks at the next batch, which holds the socket's first event. The
// registration and the append are one critical section under mu, and the
// loop takes adds under mu after its epoll_wait has returned: a batch
// with an event of the socket finds the client in adds. False when the
// loop has ended.
func (c *Core) add(cl *coreClient) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended.Load() { // set before stopped
		return false
	}
	err := c.set.Ctl(unix.EPOLL_CTL_ADD, cl.end.fd, coreClientEvents|coreEdge)
	if errors.Is(err, unix.EEXIST) {
		err = c.set.Ctl(unix.EPOLL_CTL_MOD, cl.end.fd, coreClientEvents|coreEdge)
	}
	c.adds = append(c.adds, coreAdd{cl: cl, err: err})
	return true
}

// takeAdds makes the clients add left the loop's, before a batch.
func (c *Core) takeAdds() {
	c.mu.Lock()
	adds := c.swapAddsLocked()
	c.mu.Unlock()
	c.trackAdds(adds)
}

// swapAddsLocked takes adds, under mu.
func (c *Core) swapAddsLocked() []coreAdd {
	adds := c.adds
	if len(adds) == 0 {
		return nil
	}
	c.adds, c.spare = c.spare[:0], adds
	return adds
}

// trackAdds makes adds the loop's clients, their sockets in ends.
func (c *Core) trackAdds(adds []coreAdd) {
	for i, a := range adds {
		adds[i] = coreAdd{}
		cl := a.cl
		if cl.gone {
			continue
		}
		c.clients[cl] = struct{}{}
		if a.err != nil {
			c.failed("register_client")
			c.endClient(cl, fmt.Errorf("transaction core: register client: %w", a.err))
			continue
		}
		c.track(&cl.end, coreClientEvents)
	}
}
