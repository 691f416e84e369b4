package fdconn

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// Conn is an accepted TCP socket in a Poller. It is a net.Conn and a
// syscall.Conn, safe for concurrent use like one: one Read (or RawConn
// Read) at a time waits, one Write at a time, and Close, Detach and the
// deadlines may come from any goroutine.
type Conn struct {
	p     *Poller
	fd    int
	raddr *net.TCPAddr

	// refs counts the calls using fd right now (a RawConn Read's function
	// may call Write, so they nest); Close and Detach give the number up
	// only once it is 0, so that no call ever uses a closed (and maybe
	// reused) number. Waits do not count.
	refs       atomic.Int64
	done       atomic.Bool   // closed or detached: calls fail
	closing    chan struct{} // closed with done: waits end
	unused     chan struct{} // closed by the call that leaves refs 0 after done
	unusedOnce sync.Once

	rd, wr          waiter
	raw             rawConn
	readFn, writeFn func(fd uintptr) bool // doRead and doWrite, bound once

	// file is the socket in Go's netpoller once Promote has run (nil
	// before): every call goes through its RawConn (frc, set first) from
	// then on, and promoted, closed by Promote, ends the Poller waits of
	// calls that began before. modeMu orders the deadline setters against
	// Promote.
	modeMu   sync.Mutex
	file     atomic.Pointer[os.File]
	frc      syscall.RawConn
	promoted chan struct{}

	// writeEdges: the set reports EPOLLOUT too, since a write found the
	// socket full. Until then it does not: every socket is writable when
	// it is added, and that edge would wake the Poller for nothing.
	writeEdges atomic.Bool

	laddrMu sync.Mutex
	laddr   net.Addr // asked of the kernel when first wanted
}

// waiter is one direction's wait for the Poller's word.
type waiter struct {
	op    sync.Mutex    // one call of this direction at a time
	ready chan struct{} // the Poller's word: an edge came, look again

	dlMu     sync.Mutex
	deadline time.Time
	dlMoved  chan struct{} // a deadline changed while a wait may run
	timer    *time.Timer   // used under op only

	// Read's and Write's scratch, under op.
	buf   []byte
	n     int
	errno syscall.Errno
}

func (w *waiter) init() {
	w.ready = make(chan struct{}, 1)
	w.dlMoved = make(chan struct{}, 1)
}

// poke passes an edge on without blocking: one pending word is enough.
func (w *waiter) poke() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

func (w *waiter) setDeadline(t time.Time) {
	w.dlMu.Lock()
	w.deadline = t
	w.dlMu.Unlock()
	select {
	case w.dlMoved <- struct{}{}:
	default:
	}
}

// expired reports whether the deadline has passed.
func (w *waiter) expired() bool {
	w.dlMu.Lock()
	dl := w.deadline
	w.dlMu.Unlock()
	return !dl.IsZero() && !time.Now().Before(dl)
}

// wait blocks until the Poller's word, a moved deadline (nil: look again),
// the deadline (os.ErrDeadlineExceeded), Close (net.ErrClosed) or the
// Poller's end (ErrClosed). Called under op.
func (w *waiter) wait(c *Conn) error {
	w.dlMu.Lock()
	dl := w.deadline
	w.dlMu.Unlock()
	var expire <-chan time.Time
	if !dl.IsZero() {
		d := time.Until(dl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		if w.timer == nil {
			w.timer = time.NewTimer(d)
		} else {
			w.timer.Reset(d)
		}
		expire = w.timer.C
		defer w.timer.Stop()
	}
	select {
	case <-w.ready:
		return nil
	case <-w.dlMoved:
		return nil
	case <-expire:
		return os.ErrDeadlineExceeded
	case <-c.closing:
		return net.ErrClosed
	case <-c.promoted:
		return nil // the caller's loop goes on in the netpoller
	case <-c.p.stopped:
		return ErrClosed
	}
}

// newConn registers an accepted socket; on error the caller closes fd.
func newConn(p *Poller, fd int, raddr *net.TCPAddr) (*Conn, error) {
	c := &Conn{p: p, fd: fd, raddr: raddr, closing: make(chan struct{}), unused: make(chan struct{}), promoted: make(chan struct{})}
	c.rd.init()
	c.wr.init()
	c.raw.c = c
	c.readFn, c.writeFn = c.doRead, c.doWrite
	if err := p.register(c); err != nil {
		return nil, err
	}
	return c, nil
}

// call runs fn with the descriptor, counted in refs; false if the Conn is
// closed or detached.
func (c *Conn) call(fn func(fd uintptr) bool) (done, ok bool) {
	if c.file.Load() != nil {
		return c.callFile(fn)
	}
	c.refs.Add(1)
	defer c.release()
	if c.done.Load() {
		return false, false
	}
	return fn(uintptr(c.fd)), true
}

// callFile is call once promoted: through the file's RawConn. Apart from
// call, whose variables the closure would otherwise move to the heap.
func (c *Conn) callFile(fn func(fd uintptr) bool) (done, ok bool) {
	if c.done.Load() {
		return false, false
	}
	err := c.frc.Control(func(fd uintptr) { done = fn(fd) })
	return done, err == nil
}

func (c *Conn) release() {
	if c.refs.Add(-1) == 0 && c.done.Load() {
		c.unusedOnce.Do(func() { close(c.unused) })
	}
}

// loop is RawConn.Read (w is rd) or Write (wr): fn until it reports done,
// waiting for an edge whenever it does not. Like Go's netpoller it forgets
// edges that came before it (fn finds what they announced), so that a
// wait after fn's first call is for something new.
func (c *Conn) loop(w *waiter, fn func(fd uintptr) bool) error {
	w.op.Lock()
	defer w.op.Unlock()
	return c.loopLocked(w, fn)
}

// loopLocked is loop with w.op held.
func (c *Conn) loopLocked(w *waiter, fn func(fd uintptr) bool) error {
	if c.file.Load() != nil {
		return c.fileLoop(w, fn) // promoted: nothing of the Poller's below
	}
	// A deadline moved before now is read below; only one moved during a
	// wait ends it early.
	select {
	case <-w.ready:
	default:
	}
	select {
	case <-w.dlMoved:
	default:
	}
	for {
		if c.file.Load() != nil {
			return c.fileLoop(w, fn) // promoted while this call waited
		}
		if w.expired() {
			return os.ErrDeadlineExceeded
		}
		done, ok := c.call(fn)
		if !ok {
			return net.ErrClosed
		}
		if done {
			return nil
		}
		if w == &c.wr && !c.writeEdges.Load() {
			// The first write that found the socket full: from now on
			// the set reports its edges too.
			if err := c.p.watchWrites(c); err != nil {
				return err
			}
			c.writeEdges.Store(true)
		}
		if err := w.wait(c); err != nil {
			return err
		}
	}
}

// fileLoop is loop once promoted: the file's RawConn, which waits in Go's
// netpoller with the deadlines Promote and the setters gave the file.
func (c *Conn) fileLoop(w *waiter, fn func(fd uintptr) bool) error {
	var err error
	if w == &c.rd {
		err = c.frc.Read(fn)
	} else {
		err = c.frc.Write(fn)
	}
	switch {
	case err == nil:
		return nil
	case c.done.Load():
		return net.ErrClosed // the file's own error of a close is internal/poll's
	case errors.Is(err, os.ErrDeadlineExceeded):
		return os.ErrDeadlineExceeded
	}
	return err
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.raddr, Err: err}
}

// Read reads like net.Conn.Read: io.EOF at the end of the stream.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, errno, err := c.transfer(&c.rd, b, c.readFn)
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("recvfrom", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// transfer runs Read's or Write's loop over b with w's scratch: the bytes
// moved, the system call's error and the wait's.
func (c *Conn) transfer(w *waiter, b []byte, fn func(fd uintptr) bool) (int, syscall.Errno, error) {
	w.op.Lock()
	w.buf, w.n, w.errno = b, 0, 0
	err := c.loopLocked(w, fn)
	n, errno := w.n, w.errno
	w.buf = nil
	w.op.Unlock()
	return n, errno, err
}

// doRead is Read's RawConn function, bound once (readFn): a Read
// allocates nothing.
func (c *Conn) doRead(fd uintptr) bool {
	w := &c.rd
	w.n, w.errno = rawio.ReadFD(fd, w.buf)
	return w.errno != syscall.EAGAIN
}

// Write writes all of b like net.Conn.Write, waiting while the socket is
// full.
func (c *Conn) Write(b []byte) (int, error) {
	written, errno, err := c.transfer(&c.wr, b, c.writeFn)
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", os.NewSyscallError("sendto", errno))
	}
	return written, nil
}

// doWrite is Write's RawConn function, bound once (writeFn); n counts
// what was written.
func (c *Conn) doWrite(fd uintptr) bool {
	w := &c.wr
	for w.n < len(w.buf) {
		n, e := rawio.WriteFD(fd, w.buf[w.n:])
		if e == syscall.EAGAIN {
			return false
		}
		if e != 0 {
			w.errno = e
			return true
		}
		w.n += n
	}
	return true
}

// Close unregisters and closes the socket, once Read and Write calls in
// progress have left their system calls; waits end with net.ErrClosed.
// Lingering is the socket's own (SO_LINGER, set by the caller): the close
// is a raw call, so a positive linger time that makes it wait would hold
// the thread, as the transaction core's closes do (internal/session).
func (c *Conn) Close() error {
	if f := c.file.Load(); f != nil {
		if !c.done.CompareAndSwap(false, true) {
			return c.opError("close", net.ErrClosed)
		}
		close(c.closing)
		if err := f.Close(); err != nil { // waits for calls in progress, as net's close does
			return c.opError("close", err)
		}
		return nil
	}
	if !c.finish() {
		return c.opError("close", net.ErrClosed)
	}
	if err := rawio.CloseFD(c.fd); err != nil {
		return c.opError("close", err)
	}
	return nil
}

// finish marks the Conn done, ends its waits, takes it out of the set and
// returns once no call uses the descriptor, which is still open; false if
// it was done already. Not from inside a RawConn function of the Conn.
func (c *Conn) finish() bool {
	if !c.done.CompareAndSwap(false, true) {
		return false
	}
	close(c.closing)
	c.p.unregister(c)
	if c.refs.Load() != 0 {
		<-c.unused
	}
	return true
}

// Detach takes the socket out of the Poller and hands its descriptor to
// the caller, who closes it; the Conn is closed from then on (its close
// does nothing to the socket). For an event loop that owns the socket next
// (the transaction core): no dup, no close of the Conn's own.
func (c *Conn) Detach() (int, error) {
	if c.file.Load() != nil {
		return -1, errPromoted
	}
	if !c.finish() {
		return -1, net.ErrClosed
	}
	return c.fd, nil
}

// errPromoted: Detach of a promoted Conn, whose descriptor Go's netpoller
// holds.
var errPromoted = errors.New("fdconn: socket is in Go's netpoller")

// Promote moves the socket from the Poller to Go's netpoller (an os.File
// of the same descriptor: no dup, the socket's options untouched) with
// the Conn's deadlines; the Conn works as before, its waits without the
// Poller's hop. For a session that goes on in its own goroutine. A call
// waiting meanwhile goes on in the netpoller. Calling it again does
// nothing; Detach fails from then on.
func (c *Conn) Promote() error {
	if c.done.Load() {
		return c.opError("promote", net.ErrClosed)
	}
	if c.file.Load() != nil {
		return nil
	}
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	c.p.unregister(c)
	f := os.NewFile(uintptr(c.fd), "tcp") // non-blocking: registered with the netpoller
	rc, err := f.SyscallConn()
	if err == nil {
		// SetReadDeadline fails (os.ErrNoDeadline) unless the netpoller
		// took the descriptor.
		err = f.SetReadDeadline(c.rd.current())
	}
	if err == nil {
		err = f.SetWriteDeadline(c.wr.current())
	}
	if err != nil {
		// The file owns the descriptor now; the Conn is closed with it.
		c.done.Store(true)
		close(c.closing)
		_ = f.Close()
		return c.opError("promote", err)
	}
	c.frc = rc
	c.file.Store(f)
	// A call that began before the Store is in a non-blocking system call
	// on the descriptor: let it leave before anyone may close the file.
	for c.refs.Load() != 0 {
		runtime.Gosched()
	}
	close(c.promoted)
	return nil
}

func (w *waiter) current() time.Time {
	w.dlMu.Lock()
	defer w.dlMu.Unlock()
	return w.deadline
}

// CloseWrite shuts down the sending side (a FIN), like
// net.TCPConn.CloseWrite.
func (c *Conn) CloseWrite() error {
	var errno syscall.Errno
	if _, ok := c.call(func(fd uintptr) bool {
		_, _, errno = unix.RawSyscall(unix.SYS_SHUTDOWN, fd, unix.SHUT_WR, 0)
		return true
	}); !ok {
		return c.opError("close", net.ErrClosed)
	}
	if errno != 0 {
		return c.opError("close", os.NewSyscallError("shutdown", errno))
	}
	return nil
}

// RemoteAddr is the peer's address as accept4 gave it.
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// LocalAddr is the socket's own address, asked of the kernel (a raw
// getsockname) the first time; nil if the Conn is closed by then.
func (c *Conn) LocalAddr() net.Addr {
	c.laddrMu.Lock()
	defer c.laddrMu.Unlock()
	if c.laddr != nil {
		return c.laddr
	}
	var a net.Addr
	c.call(func(fd uintptr) bool {
		var rsa unix.RawSockaddrAny
		l := uint32(unsafe.Sizeof(rsa))
		if _, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, fd, uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l))); e == 0 {
			a = tcpAddr(&rsa)
		}
		return true
	})
	if a == nil {
		return nil
	}
	c.laddr = a
	return a
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error { return c.setDeadlines(t, true, true) }

// SetReadDeadline sets the read deadline; a read waiting now looks again.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.setDeadlines(t, true, false) }

// SetWriteDeadline sets the write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.setDeadlines(t, false, true) }

// setDeadlines sets the read deadline, the write deadline or both: the
// waiters' before Promote, the file's after it. Under modeMu, so that a
// deadline set while Promote runs is not lost between the two.
func (c *Conn) setDeadlines(t time.Time, rd, wr bool) error {
	if c.done.Load() {
		return c.opError("set", net.ErrClosed)
	}
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	if f := c.file.Load(); f != nil {
		switch {
		case rd && wr:
			return f.SetDeadline(t)
		case rd:
			return f.SetReadDeadline(t)
		}
		return f.SetWriteDeadline(t)
	}
	if rd {
		c.rd.setDeadline(t)
	}
	if wr {
		c.wr.setDeadline(t)
	}
	return nil
}

// SyscallConn returns the Conn's syscall.RawConn: Control, and Read and
// Write that wait in the Poller with the Conn's deadlines.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return &c.raw, nil }

// PlainSocket marks the Conn as a plain socket for rawio.Wrap.
func (c *Conn) PlainSocket() {}

// rawConn is a Conn's syscall.RawConn.
type rawConn struct{ c *Conn }

func (r *rawConn) Control(f func(fd uintptr)) error {
	if _, ok := r.c.call(func(fd uintptr) bool { f(fd); return true }); !ok {
		return r.c.opError("raw-control", net.ErrClosed)
	}
	return nil
}

func (r *rawConn) Read(f func(fd uintptr) bool) error {
	if err := r.c.loop(&r.c.rd, f); err != nil {
		return r.c.opError("raw-read", err)
	}
	return nil
}

func (r *rawConn) Write(f func(fd uintptr) bool) error {
	if err := r.c.loop(&r.c.wr, f); err != nil {
		return r.c.opError("raw-write", err)
	}
	return nil
}

// tcpAddr turns a sockaddr into a *net.TCPAddr; nil for another family.
func tcpAddr(rsa *unix.RawSockaddrAny) *net.TCPAddr {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return &net.TCPAddr{IP: net.IPv4(sa.Addr[0], sa.Addr[1], sa.Addr[2], sa.Addr[3]), Port: int(p[0])<<8 | int(p[1])}
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		ip := make(net.IP, net.IPv6len)
		copy(ip, sa.Addr[:])
		a := &net.TCPAddr{IP: ip, Port: int(p[0])<<8 | int(p[1])}
		if sa.Scope_id != 0 {
			a.Zone = strconv.FormatUint(uint64(sa.Scope_id), 10) // a name would cost a netlink query
		}
		return a
	}
	return nil
}
