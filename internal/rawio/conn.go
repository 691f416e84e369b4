package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// rawWriteMax is the largest write done with a raw system call.
const rawWriteMax = 64 << 10

// Conn is a net.Conn whose Read and Write use raw system calls when the
// underlying connection is a plain socket. See the package comment.
type Conn struct {
	net.Conn
	rc syscall.RawConn // nil: Read and Write of Conn itself

	// Like a net.Conn, a Conn may be written (and read) by several
	// goroutines at once, e.g. the Terminate of a Close while a session
	// still flushes: each direction's scratch is used under its mutex.
	rd, wr          direction
	readFn, writeFn func(fd uintptr) bool // doRead and doWrite, bound once so a call allocates nothing
	awaitFn         func(fd uintptr) bool // doAwait, bound once
}

// direction is the scratch state of one direction's calls (WriteAwaitRead
// uses the read direction's: it is a read that writes first).
type direction struct {
	mu    sync.Mutex
	buf   []byte
	n     int
	err   error
	queue bool // WriteAwaitInput: bytes queued before the write end the wait
}

// call runs the RawConn's Read (write false) or Write with fn over p, one
// call of this direction at a time.
func (d *direction) call(rc syscall.RawConn, write bool, fn func(fd uintptr) bool, p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf, d.n, d.err = p, 0, nil
	var err error
	if write {
		err = rc.Write(fn)
	} else {
		err = rc.Read(fn)
	}
	n, derr := d.n, d.err
	d.buf, d.err = nil, nil
	if err != nil {
		return n, err // deadline or closed, already a *net.OpError
	}
	return n, derr
}

// PlainSocket is a connection of another package that is a plain socket
// underneath, whose RawConn waits for readiness and honours deadlines like
// a *net.TCPConn's (internal/fdconn's): Wrap uses it the same way.
type PlainSocket interface {
	net.Conn
	syscall.Conn
	PlainSocket()
}

// Wrap returns nc as a Conn; a connection that is not a plain TCP or unix
// socket keeps its own Read and Write.
func Wrap(nc net.Conn) *Conn {
	c := &Conn{Conn: nc}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn, PlainSocket:
		rc, err := nc.(syscall.Conn).SyscallConn()
		if err == nil {
			c.rc = rc
		}
	}
	c.readFn = c.doRead
	c.writeFn = c.doWrite
	c.awaitFn = c.doAwait
	return c
}

// SyscallConn returns the underlying connection's, so that a Conn can be
// parked or have socket options set like the socket itself. A Conn over a
// plain socket hands out the RawConn it keeps, without allocating.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	if c.rc != nil {
		return c.rc, nil
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, syscall.EINVAL
	}
	return sc.SyscallConn()
}

// ErrNoSocket: the connection has no descriptor to control (not a
// syscall.Conn, e.g. a net.Pipe).
var ErrNoSocket = errors.New("connection has no socket")

// Control runs f with nc's descriptor, held open for the call
// (RawConn.Control): for calls that never wait, so nc's read and write
// deadlines have no say.
func Control(nc net.Conn, f func(fd uintptr)) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return ErrNoSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return raw.Control(f)
}

// Socket reports whether c is over a plain socket (raw calls in use).
func (c *Conn) Socket() bool { return c.rc != nil }

// Unwrap returns the wrapped connection.
func (c *Conn) Unwrap() net.Conn { return c.Conn }

// Read reads into p like net.Conn.Read.
func (c *Conn) Read(p []byte) (int, error) {
	if c.rc == nil {
		return c.Conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	return c.rd.call(c.rc, false, c.readFn, p)
}

func (c *Conn) doRead(fd uintptr) bool {
	n, e := ReadFD(fd, c.rd.buf)
	switch e {
	case 0:
		c.rd.n = n
		if n == 0 {
			c.rd.err = io.EOF
		}
		return true
	case syscall.EAGAIN:
		return false
	default:
		c.rd.err = c.opError("read", e)
		return true
	}
}

// ReadFD reads from the non-blocking socket fd into b (len(b) > 0) with
// one raw system call, EINTR retried: n bytes (0 at EOF), or errno (EAGAIN:
// nothing to read now). For use inside a RawConn's Read. The call is
// recvfrom, not read: a socket's read goes through the file layer first
// (about 100 ns more per call here, BenchmarkReadFDEmpty; a transaction
// makes five such calls).
func ReadFD(fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall6(sysRecvfrom, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// WriteFD writes b (len(b) > 0) to the non-blocking socket fd with one raw
// system call, EINTR retried: n bytes written, or errno (EAGAIN: no room
// now; EPIPE once the peer is gone, without a SIGPIPE where the system has
// MSG_NOSIGNAL). For use inside a RawConn's Write. The call is sendto, not
// write, for the reason ReadFD gives.
func WriteFD(fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall6(sysSendto, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), sendFlags, 0, 0)
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// Write writes p like net.Conn.Write: all of it, or an error.
func (c *Conn) Write(p []byte) (int, error) {
	if c.rc == nil || len(p) > rawWriteMax {
		return c.Conn.Write(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	return c.wr.call(c.rc, true, c.writeFn, p)
}

func (c *Conn) doWrite(fd uintptr) bool {
	for len(c.wr.buf) > 0 {
		n, e := WriteFD(fd, c.wr.buf)
		switch e {
		case 0:
			c.wr.n += n
			c.wr.buf = c.wr.buf[n:]
		case syscall.EAGAIN:
			return false // wait until writable, then go on with the rest
		default:
			c.wr.err = c.opError("write", e)
			return true
		}
	}
	return true
}

// WriteAwaitRead writes p like Write and returns once the socket has
// something to read, for a request whose answer the caller reads next: the
// read then finds the answer at once, where a Read right after the write
// would first find the socket empty (one system call that returns EAGAIN,
// then the wait). The write runs inside the RawConn's Read, after it has
// reset the descriptor's readiness, so an answer that arrives while the
// write returns is not missed. A wait that ends without data (a deadline,
// the connection closed) is not reported: the read that follows meets the
// same condition and reports it. A Conn without raw calls, or a p larger
// than rawWriteMax, is a plain Write.
func (c *Conn) WriteAwaitRead(p []byte) (int, error) { return c.writeAwait(p, false) }

// WriteAwaitInput is WriteAwaitRead for a peer that may have sent before
// it was asked (a client that does not wait for the challenge of a login
// exchange): bytes already queued on the socket when the write is done end
// the wait at once. WriteAwaitRead would wait for a readiness edge those
// bytes gave before the wait began. It costs one more raw call (TIOCINQ)
// per request; a server's answer, which comes only once it is asked for,
// needs WriteAwaitRead only. Where there is no TIOCINQ (not Linux) it is
// Write.
func (c *Conn) WriteAwaitInput(p []byte) (int, error) { return c.writeAwait(p, true) }

func (c *Conn) writeAwait(p []byte, queue bool) (int, error) {
	if c.rc == nil || len(p) == 0 || len(p) > rawWriteMax || (queue && !inputQueuedSupported) {
		return c.Write(p)
	}
	// The read direction's scratch holds the request and, once written,
	// the write's result (n -1: not written yet).
	c.rd.mu.Lock()
	c.rd.buf, c.rd.n, c.rd.err, c.rd.queue = p, -1, nil, queue
	_ = c.rc.Read(c.awaitFn)
	n, err := c.rd.n, c.rd.err
	c.rd.buf, c.rd.err, c.rd.queue = nil, nil, false
	c.rd.mu.Unlock()
	if n < 0 {
		// The wait did not start (a read deadline already passed, the
		// connection closed): the write alone.
		return c.Write(p)
	}
	return n, err
}

// doAwait writes on its first call and then waits for readability: each
// later call is a readiness edge.
func (c *Conn) doAwait(fd uintptr) bool {
	if c.rd.n >= 0 {
		return true
	}
	c.rd.n, c.rd.err = c.wr.call(c.rc, true, c.writeFn, c.rd.buf)
	// The readiness was reset before this call: bytes that came before it
	// gave their edge already, so they are looked for here.
	return c.rd.err != nil || (c.rd.queue && inputQueued(fd) > 0)
}

// opError is the error net.Conn would return for errno e.
func (c *Conn) opError(op string, e syscall.Errno) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, e)}
}
