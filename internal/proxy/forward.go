package proxy

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/doorman-go/doorman/internal/rawio"
)

// forwardPumps copies bytes both ways between client and server until both
// directions have ended or cut is closed, and closes both connections: how
// a connection is forwarded where there is no relay (no epoll). Each
// direction is a pump (see there) on its own goroutine. A clean EOF in one
// direction is passed on as a half-close (CloseWrite); an error in either
// direction aborts both. It reports whether the connection ended because
// cut was closed. serverClosed (may be nil) is called, on this goroutine
// and at once, when the server's side ends before the client's and before
// any cut: the server closed it. "Before the client's" is decided by when the client's side stopped
// reading, not by which direction reports first: a client's FIN passed on
// as a half-close makes the server end its side too, and that end may
// reach errc before the client direction's report does.
func forwardPumps(client, server *net.TCPConn, cut <-chan struct{}, serverClosed func()) (wasCut bool) {
	errc := make(chan pipeEnd, 2)
	var clientEnded atomic.Bool
	go pipeClientToServer(server, client, &clientEnded, errc)
	go pipeServerToClient(client, server, errc)
	abort := func() {
		_ = client.Close()
		_ = server.Close()
	}
	for pending := 2; pending > 0; {
		select {
		case end := <-errc:
			if pending == 2 && !wasCut && end.fromServer && !clientEnded.Load() && serverClosed != nil {
				serverClosed()
			}
			pending--
			if end.err != nil {
				abort()
			}
		case <-cut:
			wasCut = true
			cut = nil
			abort()
		}
	}
	abort()
	return wasCut
}

// pipeEnd is how one direction ended.
type pipeEnd struct {
	fromServer bool
	err        error
}

// pipeClientToServer and pipeServerToClient are separate functions only so
// that goroutine dumps say which direction is which.
// The client direction sets ended as soon as its pump stops, before the
// half-close that lets the server end its side.
func pipeClientToServer(dst, src *net.TCPConn, ended *atomic.Bool, errc chan<- pipeEnd) {
	errc <- pipeEnd{fromServer: false, err: pipe(dst, src, ended)}
}

func pipeServerToClient(dst, src *net.TCPConn, errc chan<- pipeEnd) {
	errc <- pipeEnd{fromServer: true, err: pipe(dst, src, nil)}
}

// pipe pumps src to dst and passes a clean EOF on as a half-close; ended
// (may be nil) is set once the pump has stopped, whatever the reason.
func pipe(dst, src *net.TCPConn, ended *atomic.Bool) error {
	err := newPump(dst, src).run()
	if ended != nil {
		ended.Store(true)
	}
	if err != nil {
		return err
	}
	if err := dst.CloseWrite(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// pumpBufSize is the most one read moves; a buffer is held only while its
// bytes are on the way, so an idle connection holds none.
const pumpBufSize = 32 << 10

var pumpBufs = sync.Pool{New: func() any { b := make([]byte, pumpBufSize); return &b }}

// pump moves the bytes of one direction with raw read and write system
// calls through the sockets' RawConns: Go's netpoller still waits for
// readiness, but a call that runs the receiver's loopback TCP stack for
// 10-20 µs does not make the runtime hand the thread's P to another
// thread, as a blocking-syscall read, write or splice does (the lever
// internal/rawio measured for pg_doorman; docs/benchmarks-proxy.md). It
// replaces io.Copy's splice(2), which costs the same two system calls per
// chunk plus a pipe. The buffer comes from pumpBufs when the socket is
// readable and goes back once written.
type pump struct {
	dst, src syscall.RawConn
	buf      *[]byte
	n, off   int
	err      error
	readFn   func(fd uintptr) bool // bound once: a call allocates nothing
	writeFn  func(fd uintptr) bool
}

func newPump(dst, src *net.TCPConn) *pump {
	p := &pump{}
	var err error
	if p.dst, err = dst.SyscallConn(); err != nil {
		p.err = err
	}
	if p.src, err = src.SyscallConn(); err != nil {
		p.err = err
	}
	p.readFn, p.writeFn = p.read, p.write
	return p
}

// run pumps until src ends (nil on a clean EOF) or a call fails.
func (p *pump) run() error {
	if p.err != nil {
		return p.err
	}
	for {
		if err := p.src.Read(p.readFn); err != nil {
			p.release()
			return err // closed (abort) or the like, as net reports it
		}
		if p.err != nil || p.n == 0 {
			p.release()
			if p.err != nil {
				return p.err
			}
			return nil // EOF
		}
		p.off = 0
		err := p.dst.Write(p.writeFn)
		p.release()
		if err != nil {
			return err
		}
		if p.err != nil {
			return p.err
		}
	}
}

func (p *pump) release() {
	if p.buf != nil {
		pumpBufs.Put(p.buf)
		p.buf = nil
	}
}

// read takes a buffer and reads what the socket holds; without data it
// gives the buffer back and lets the netpoller wait.
func (p *pump) read(fd uintptr) bool {
	if p.buf == nil {
		p.buf = pumpBufs.Get().(*[]byte)
	}
	n, e := rawio.ReadFD(fd, *p.buf)
	switch e {
	case 0:
		p.n = n
		return true
	case syscall.EAGAIN:
		p.release()
		return false
	default:
		p.n, p.err = 0, os.NewSyscallError("read", e)
		return true
	}
}

// write writes buf[off:n], waiting for room when the socket is full.
func (p *pump) write(fd uintptr) bool {
	b := *p.buf
	for p.off < p.n {
		n, e := rawio.WriteFD(fd, b[p.off:p.n])
		switch e {
		case 0:
			p.off += n
		case syscall.EAGAIN:
			return false
		default:
			p.err = os.NewSyscallError("write", e)
			return true
		}
	}
	return true
}
