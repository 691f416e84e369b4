package floor

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// loops is ModeEpollThread: connections dealt to event loops in turn. The
// pair logic is internal/relay's (ModeEpollNetpoller runs that package
// itself); only the wait differs: each loop blocks its OS thread in
// epoll_wait.
type loops struct {
	ls   []*loop
	next int // owned by Serve's goroutine (add)
	wg   sync.WaitGroup
}

func newLoops(n int) (*loops, error) {
	ls := &loops{}
	for range n {
		l, err := newLoop()
		if err != nil {
			ls.close()
			return nil, err
		}
		ls.ls = append(ls.ls, l)
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			l.run()
		}()
	}
	return ls, nil
}

func (ls *loops) add(client, server *net.TCPConn) {
	l := ls.ls[ls.next%len(ls.ls)]
	ls.next++
	l.add(client, server)
}

func (ls *loops) close() {
	for _, l := range ls.ls {
		l.stop()
	}
	ls.wg.Wait()
}

// events of one epoll_wait.
const batchSize = 128

// loop is one event loop over one epoll set. The goroutine running run owns
// buf, events and every pair once added; mu guards pairs (the fd-indexed
// table add writes) and closed.
type loop struct {
	epfd   int
	wakeFD int // eventfd that stop writes

	mu     sync.Mutex
	pairs  []*pair // by fd
	closed bool

	buf    []byte
	events []unix.EpollEvent
}

// pair is one forwarded connection: side 0 the client, side 1 the server.
// pend[i] holds bytes read from the other side that fd[i] did not take yet;
// while it is not empty the other side is not read.
type pair struct {
	fd   [2]int
	pend [2][]byte
	eof  [2]bool // side i has sent EOF (and the other side was half-closed)
	gone bool
}

func newLoop() (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	l := &loop{epfd: epfd, wakeFD: -1, buf: make([]byte, copyBufSize), events: make([]unix.EpollEvent, batchSize)}
	l.wakeFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, l.wakeFD, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.wakeFD)}); err != nil {
		_ = unix.Close(l.wakeFD)
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("epoll_ctl add eventfd: %w", err)
	}
	return l, nil
}

// takePair takes the descriptors of client and server over (dups of them;
// the net.Conns are closed, so Go's netpoller no longer watches them), for
// a loop's add; false, with both closed, when either could not be taken.
func takePair(client, server *net.TCPConn) (cfd, sfd int, ok bool) {
	cfd, cerr := rawio.TakeFD(client)
	sfd, serr := rawio.TakeFD(server)
	if cerr != nil || serr != nil {
		rawio.CloseFDs(cfd, sfd)
		return -1, -1, false
	}
	return cfd, sfd, true
}

// add takes the descriptors of client and server over (takePair) and adds
// both to the set.
func (l *loop) add(client, server *net.TCPConn) {
	cfd, sfd, ok := takePair(client, server)
	if !ok {
		return
	}
	p := &pair{fd: [2]int{cfd, sfd}}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		rawio.CloseFDs(cfd, sfd)
		return
	}
	for _, fd := range p.fd {
		if fd >= len(l.pairs) {
			grown := make([]*pair, max(fd+1, 2*len(l.pairs), 64))
			copy(grown, l.pairs)
			l.pairs = grown
		}
		l.pairs[fd] = p
	}
	for _, fd := range p.fd {
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
			l.dropLocked(p)
			return
		}
	}
}

// stop makes run return; run closes every pair and the epoll fd.
func (l *loop) stop() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(l.wakeFD, one[:])
}

// dropAll closes every pair; run's last step.
func (l *loop) dropAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, p := range l.pairs {
		if p != nil {
			l.dropLocked(p)
		}
	}
}

func (l *loop) run() {
	defer l.dropAll()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer rawio.CloseFDs(l.epfd, l.wakeFD)
	for {
		n, err := unix.EpollWait(l.epfd, l.events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || !l.dispatch(l.events[:n]) {
			return
		}
	}
}

// dispatch handles one batch; false once the loop is stopped.
func (l *loop) dispatch(events []unix.EpollEvent) bool {
	for i := range events {
		ev := &events[i]
		fd := int(ev.Fd)
		if fd == l.wakeFD {
			return false
		}
		l.mu.Lock()
		var p *pair
		if !l.closed && fd < len(l.pairs) {
			p = l.pairs[fd]
		}
		l.mu.Unlock()
		if p == nil || p.gone {
			continue
		}
		side := 0
		if p.fd[1] == fd {
			side = 1
		}
		if !l.handle(p, side, ev.Events) {
			l.drop(p)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.closed
}

// handle serves one event of side's fd; false: the pair is over.
func (l *loop) handle(p *pair, side int, events uint32) bool {
	other := 1 - side
	if events&unix.EPOLLOUT != 0 && len(p.pend[side]) > 0 {
		n, e := rawio.WriteFD(uintptr(p.fd[side]), p.pend[side])
		switch {
		case e == syscall.EAGAIN:
		case e != 0:
			return false
		case n == len(p.pend[side]):
			p.pend[side] = p.pend[side][:0]
			if !l.update(p) {
				return false
			}
		default:
			p.pend[side] = append(p.pend[side][:0], p.pend[side][n:]...)
		}
	}
	switch {
	case events&unix.EPOLLERR != 0:
		return false
	case events&unix.EPOLLHUP != 0 && (p.eof[side] || len(p.pend[other]) > 0):
		// Level-triggered, a hangup would come back at once, so the pair
		// ends: bytes the side sent before its FIN and that are not read
		// yet are lost when the other side is behind. internal/relay takes
		// such a socket out of the set instead; this loop only measures
		// request/response traffic, where it does not happen.
		return false
	case events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP) == 0 || len(p.pend[other]) > 0 || p.eof[side]:
		return true
	}
	n, e := rawio.ReadFD(uintptr(p.fd[side]), l.buf)
	switch {
	case e == syscall.EAGAIN:
		return true
	case e != 0:
		return false
	case n == 0: // EOF: pass it on as a half-close
		p.eof[side] = true
		if p.eof[other] {
			return false
		}
		_ = unix.Shutdown(p.fd[other], unix.SHUT_WR)
		return l.update(p)
	}
	for off := 0; off < n; {
		w, e := rawio.WriteFD(uintptr(p.fd[other]), l.buf[off:n])
		switch {
		case e == syscall.EAGAIN:
			p.pend[other] = append(p.pend[other][:0], l.buf[off:n]...)
			return l.update(p)
		case e != 0:
			return false
		}
		off += w
	}
	return true
}

// update sets what epoll reports for both sides of p: readable while the
// other side has nothing pending and the side has not ended, writable while
// the side has bytes pending. A blocking epoll_wait reports a side that is
// ready at once, whatever woke it.
func (l *loop) update(p *pair) bool {
	for side := range 2 {
		var ev uint32
		if len(p.pend[1-side]) == 0 && !p.eof[side] {
			ev |= unix.EPOLLIN | unix.EPOLLRDHUP
		}
		if len(p.pend[side]) > 0 {
			ev |= unix.EPOLLOUT
		}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, p.fd[side], &unix.EpollEvent{Events: ev, Fd: int32(p.fd[side])}); err != nil {
			return false
		}
	}
	return true
}

func (l *loop) drop(p *pair) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropLocked(p)
}

// dropLocked closes both sides of p and frees their slots; mu held.
func (l *loop) dropLocked(p *pair) {
	if p.gone {
		return
	}
	p.gone = true
	for _, fd := range p.fd {
		if fd < len(l.pairs) && l.pairs[fd] == p {
			l.pairs[fd] = nil
		}
		_ = unix.Close(fd) // closing the last descriptor leaves the set
	}
}
