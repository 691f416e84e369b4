package session

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// parkedSocket is a parked client's socket without its net.Conn: a
// descriptor of its own (a dup) where the net.Conn, its poll descriptor
// and its two addresses are gone, which is most of what an idle client
// costs after the Session itself. park makes one and hands it to the
// Parker (it is a syscall.Conn); resume turns it back into a net.Conn
// (reopen), and Kill may write its last word and close it while the
// session still waits for mu. It is a net.Conn so that Kill, Migrate and
// the admin console (SHOW CLIENTS reads LocalAddr) keep working on a
// parked session: its calls never wait, deadlines are ignored, and
// addresses are asked of the kernel when wanted. mu guards fd: once
// closed (or reopened) the number is never used again.
type parkedSocket struct {
	mu     sync.Mutex
	fd     int
	closed bool
	wrote  bool // a last word went out through Write: Close is graceful
}

// errParkedSocketClosed is what a parkedSocket that was closed or reopened
// answers.
var errParkedSocketClosed = errors.New("parked client socket is closed")

// dupSocket parks nc's socket: a close-on-exec dup of its descriptor,
// non-blocking like nc's. The caller closes nc afterwards; that close does
// not end the connection, since the dup holds the socket open.
func dupSocket(nc net.Conn) (*parkedSocket, error) {
	fd, err := rawio.DupFD(nc)
	if err != nil {
		return nil, err
	}
	return &parkedSocket{fd: fd}, nil
}

// reopen makes the socket a net.Conn again (net.FileConn, which dups the
// descriptor once more, then the parked one is closed). Go's own TCP
// options of a new connection (TCP_NODELAY on, its keepalive) come with
// it: the caller sets the configured ones again.
func (p *parkedSocket) reopen() (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errParkedSocketClosed
	}
	f := os.NewFile(uintptr(p.fd), "client")
	nc, err := net.FileConn(f)
	p.closed = true
	_ = f.Close() // the parked descriptor; nc has its own
	return nc, err
}

// drop closes the descriptor of a parkedSocket that was never parked,
// leaving the socket's options alone (nc still has it open).
func (p *parkedSocket) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		_ = unix.Close(p.fd)
	}
}

func (p *parkedSocket) Read([]byte) (int, error) { return 0, errParkedSocketClosed }

// Write writes what the socket takes at once: Kill's last word.
func (p *parkedSocket) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, errParkedSocketClosed
	}
	n, err := unix.Write(p.fd, b)
	p.wrote = true
	if err != nil {
		return max(n, 0), &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", err)}
	}
	return n, nil
}

// Close closes the socket. After a last word (Write) it closes
// gracefully: linger off, so that a reset (tcp_so_linger 0) does not throw
// the word away. Otherwise tcp_so_linger, set at the welcome, decides, as
// it does for a session's net.Conn (Session.close).
func (p *parkedSocket) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.wrote {
		_ = rawio.SetLingerFD(p.fd, -1)
	}
	return rawio.CloseFD(p.fd) // lingering off or 0: the close does not wait
}

func (p *parkedSocket) LocalAddr() net.Addr  { return p.addr(unix.Getsockname) }
func (p *parkedSocket) RemoteAddr() net.Addr { return p.addr(unix.Getpeername) }

// addr asks the kernel for one of the socket's addresses; nil when closed.
func (p *parkedSocket) addr(get func(int) (unix.Sockaddr, error)) net.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	sa, err := get(p.fd)
	if err != nil {
		return nil
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: sa.Name, Net: "unix"}
	}
	return nil
}

func (p *parkedSocket) SetDeadline(time.Time) error      { return nil }
func (p *parkedSocket) SetReadDeadline(time.Time) error  { return nil }
func (p *parkedSocket) SetWriteDeadline(time.Time) error { return nil }

// SyscallConn gives the Parker the descriptor (Control), under mu.
func (p *parkedSocket) SyscallConn() (syscall.RawConn, error) { return parkedRaw{p}, nil }

type parkedRaw struct{ p *parkedSocket }

func (r parkedRaw) Control(f func(fd uintptr)) error {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if r.p.closed {
		return errParkedSocketClosed
	}
	f(uintptr(r.p.fd))
	return nil
}

// Read and Write call f once and never wait: nothing reads or writes a
// parked socket through its RawConn.
func (r parkedRaw) Read(f func(fd uintptr) bool) error {
	return r.Control(func(fd uintptr) { f(fd) })
}

func (r parkedRaw) Write(f func(fd uintptr) bool) error {
	return r.Control(func(fd uintptr) { f(fd) })
}
