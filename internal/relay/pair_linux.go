package relay

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// pendBufs holds the copies of bytes a side did not take yet.
var pendBufs = sync.Pool{New: func() any { b := make([]byte, 0, bufSize); return &b }}

// Pair is one relayed connection: side 0 the client, side 1 the server.
// The loop's goroutine owns every field but cut until done is closed; after
// that they are read-only (Err).
type Pair struct {
	l                 *loop
	ev                Events // may be nil
	done, serverEnded chan struct{}
	cut               bool // under l.mu: Cut was asked

	fd [2]int
	// pend[i] holds bytes read from the other side that side i did not
	// take yet; while it is not nil the other side is not read.
	pend     [2]*[]byte
	interest [2]uint32 // what the set reports for each side now
	out      [2]bool   // side's socket is out of the set (leaveSet)
	eof      [2]bool   // side i sent EOF (and the other side was half-closed)
	// serverFirst: the server's side ended while the client's had not (a
	// client's read error ends the pair, so eof[0] says whether it had).
	serverFirst bool
	gone        bool
	err         error
}

// Done is closed once the pair is over and both sockets are closed.
func (p *Pair) Done() <-chan struct{} { return p.done }

// ServerEnded is closed, at once, when the server's side ends (EOF, or an
// error reading it) while the client's side has not ended: the server
// closed the connection. The client may still be sending; the pair goes on
// until it stops.
func (p *Pair) ServerEnded() <-chan struct{} { return p.serverEnded }

// Err is, once Done is closed, the first error that ended the pair: nil
// when both sides sent EOF, after Cut and after the Relay's Close.
func (p *Pair) Err() error { return p.err }

// notifyEnded calls Events.Ended, once, after done is closed.
func (p *Pair) notifyEnded() {
	if p.ev != nil {
		p.ev.Ended(p.err)
	}
}

// Cut ends the pair: the loop closes both sockets, then Done is closed. It
// returns at once; calling it again, or after the end, does nothing.
func (p *Pair) Cut() {
	l := p.l
	l.mu.Lock()
	if p.cut || l.closed {
		l.mu.Unlock()
		return
	}
	p.cut = true
	l.cuts = append(l.cuts, p)
	l.mu.Unlock()
	l.kick()
}

// handle serves one event of side's socket; false: the pair is over.
func (p *Pair) handle(l *loop, side int, events uint32) bool {
	other := 1 - side
	if events&unix.EPOLLOUT != 0 && p.pend[side] != nil && !p.flush(l, side) {
		return false
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
		return true
	}
	if p.pend[other] != nil || p.eof[side] {
		// Not read now. An error or a hangup is reported whatever the
		// interest and, level-triggered, at every wait again.
		switch {
		case events&unix.EPOLLERR != 0, events&unix.EPOLLHUP != 0 && p.eof[side]:
			p.readEnded(side, fmt.Errorf("relay: %s: %w", sideName[side], socketError(p.fd[side])))
			return false
		case events&unix.EPOLLHUP != 0:
			// Both directions of the socket are shut: its peer's FIN
			// came after the half-close passed on to it. What it sent
			// before may still wait to be read once the other side has
			// taken what is pending, so the socket leaves the set until
			// then (update puts it back).
			return p.leaveSet(l, side)
		}
		return true
	}
	n, e := rawio.ReadFD(uintptr(p.fd[side]), l.buf)
	switch {
	case e == syscall.EAGAIN:
		return true
	case e != 0:
		p.readEnded(side, fmt.Errorf("relay: read %s: %w", sideName[side], os.NewSyscallError("read", e)))
		return false
	case n == 0:
		return p.gotEOF(l, side)
	}
	// The socket may hold more (the rest of a full read, or the end of
	// file after these bytes): the set is level-triggered, and the loop
	// looks again before it waits.
	return p.write(l, other, l.buf[:n])
}

var sideName = [2]string{"client", "server"}

// readEnded records that side's reading ended, with err (nil: EOF); a
// server that ends before the client is reported at once.
func (p *Pair) readEnded(side int, err error) {
	if side == 1 && !p.eof[0] && !p.serverFirst {
		p.serverFirst = true
		close(p.serverEnded)
		if p.ev != nil {
			p.ev.ServerEnded()
		}
	}
	if err != nil && p.err == nil {
		p.err = err
	}
}

// gotEOF passes side's EOF on as a half-close of the other side; the pair
// is over when both have ended.
func (p *Pair) gotEOF(l *loop, side int) bool {
	p.readEnded(side, nil)
	p.eof[side] = true
	other := 1 - side
	if p.eof[other] {
		return false
	}
	// Nothing is pending for other: side was read, so other took all.
	_ = unix.Shutdown(p.fd[other], unix.SHUT_WR)
	return p.update(l)
}

// write writes b to side dst; what dst does not take now is copied and
// waits for EPOLLOUT.
func (p *Pair) write(l *loop, dst int, b []byte) bool {
	for len(b) > 0 {
		n, e := rawio.WriteFD(uintptr(p.fd[dst]), b)
		switch {
		case e == syscall.EAGAIN:
			bp := pendBufs.Get().(*[]byte)
			*bp = append((*bp)[:0], b...)
			p.pend[dst] = bp
			return p.update(l)
		case e != 0:
			p.fail(fmt.Errorf("relay: write %s: %w", sideName[dst], os.NewSyscallError("write", e)))
			return false
		}
		b = b[n:]
	}
	return true
}

// flush writes what side has pending; once it is all out the other side is
// read again.
func (p *Pair) flush(l *loop, side int) bool {
	b := *p.pend[side]
	off := 0
	for off < len(b) {
		n, e := rawio.WriteFD(uintptr(p.fd[side]), b[off:])
		switch {
		case e == syscall.EAGAIN:
			*p.pend[side] = b[:copy(b, b[off:])]
			return true
		case e != 0:
			p.fail(fmt.Errorf("relay: write %s: %w", sideName[side], os.NewSyscallError("write", e)))
			return false
		}
		off += n
	}
	p.releasePend(side)
	return p.update(l)
}

func (p *Pair) releasePend(side int) {
	if bp := p.pend[side]; bp != nil {
		p.pend[side] = nil
		*bp = (*bp)[:0]
		pendBufs.Put(bp)
	}
}

func (p *Pair) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// update sets what the set reports for each side: readable while the other
// side has nothing pending and the side has not ended, writable while the
// side has bytes pending. A side made readable again may hold bytes
// already, which wakes nobody: the loop looks again before it waits (more).
func (p *Pair) update(l *loop) bool {
	for side := range 2 {
		var ev uint32
		if p.pend[1-side] == nil && !p.eof[side] {
			ev |= unix.EPOLLIN | unix.EPOLLRDHUP
		}
		if p.pend[side] != nil {
			ev |= unix.EPOLLOUT
		}
		op := unix.EPOLL_CTL_MOD
		switch {
		case p.out[side] && ev == 0:
			continue
		case p.out[side]:
			op = unix.EPOLL_CTL_ADD
		case ev == p.interest[side]:
			continue
		}
		if err := l.set.Ctl(op, p.fd[side], ev); err != nil {
			p.fail(fmt.Errorf("relay: epoll_ctl: %w", err))
			return false
		}
		p.interest[side], p.out[side] = ev, false
	}
	return true
}

// leaveSet takes side's socket out of the set (a hung-up socket that may
// not be read yet); update puts it back.
func (p *Pair) leaveSet(l *loop, side int) bool {
	if err := l.set.Ctl(unix.EPOLL_CTL_DEL, p.fd[side], 0); err != nil {
		p.fail(fmt.Errorf("relay: epoll_ctl del: %w", err))
		return false
	}
	p.interest[side], p.out[side] = 0, true
	return true
}

// socketError is the pending error of a socket that reported EPOLLERR or
// EPOLLHUP (a reset, or gone).
func socketError(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil:
		return os.NewSyscallError("getsockopt", err)
	case v != 0:
		return os.NewSyscallError("socket", syscall.Errno(v))
	}
	return syscall.ECONNRESET
}
