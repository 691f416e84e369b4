package fdconn

import (
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// Listener accepts the connections of a *net.TCPListener into a Poller.
// Each accept4 is a raw call made in a RawConn read of a dup of the
// listener (a listener's own RawConn cannot wait), so that the wait is Go's
// netpoller's as usual. The dup keeps the socket listening: whoever closes
// the listener closes the Listener too.
type Listener struct {
	p    *Poller
	addr net.Addr
	f    *os.File // the dup
	rc   syscall.RawConn
	// closed is set by Close before the dup closes: os.File's RawConn
	// reports its close with an error of package internal/poll, which
	// nothing outside the standard library can match.
	closed atomic.Bool

	mu       sync.Mutex // one Accept at a time; guards the scratch below
	acceptFn func(fd uintptr) bool
	nfd      int
	errno    syscall.Errno
	rsa      unix.RawSockaddrAny
}

// Listen makes ln's Listener, with a dup of ln's descriptor; ln stays the
// caller's.
func (p *Poller) Listen(ln *net.TCPListener) (*Listener, error) {
	f, err := ln.File()
	if err != nil {
		return nil, fmt.Errorf("fdconn: listener: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("fdconn: listener: %w", err)
	}
	l := &Listener{p: p, addr: ln.Addr(), f: f, rc: rc}
	l.acceptFn = l.accept
	return l, nil
}

// Close closes the dup: a waiting Accept returns net.ErrClosed.
func (l *Listener) Close() error {
	l.closed.Store(true)
	return l.f.Close()
}

// Accept returns the next connection, registered in the Poller. A closed
// Listener gives net.ErrClosed (in a *net.OpError); a failed accept4
// (EMFILE, say) a *net.OpError around its errno, for the caller to back
// off; a closed Poller ErrClosed.
func (l *Listener) Accept() (*Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.rc.Read(l.acceptFn); err != nil {
		if l.closed.Load() {
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
		}
		return nil, err
	}
	if l.errno != 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: os.NewSyscallError("accept4", l.errno)}
	}
	c, err := newConn(l.p, l.nfd, tcpAddr(&l.rsa))
	if err != nil {
		_ = rawio.CloseFD(l.nfd) // not yet a client: nothing to linger for
		return nil, err
	}
	return c, nil
}

// accept is the RawConn read: accept4 until a connection, an error, or an
// empty queue (false: wait for the next).
func (l *Listener) accept(fd uintptr) bool {
	for {
		sl := uint32(unsafe.Sizeof(l.rsa))
		r, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, fd, uintptr(unsafe.Pointer(&l.rsa)), uintptr(unsafe.Pointer(&sl)),
			unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		switch {
		case e == 0:
			l.nfd, l.errno = int(r), 0
			return true
		case e == unix.EAGAIN:
			return false
		case e == unix.EINTR || e == unix.ECONNABORTED:
			// A connection that went away in the queue: the next one.
			continue
		}
		l.nfd, l.errno = -1, e
		return true
	}
}
