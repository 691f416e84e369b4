package txloop

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// events of a registration: readable, the peer closed its side (EPOLLERR
// and EPOLLHUP always come), edge-triggered.
const events = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET

// batch is how many events one epoll_wait takes.
const batch = 128

type slot struct {
	m   Member // nil: fd is not in the set
	gen uint32 // counts the Adds of this fd number; travels in the event's Pad
}

// Loop is one event loop: one goroutine, one epoll set. See the package
// comment.
type Loop struct {
	ep   *rawio.PolledEpoll
	done chan struct{}

	// mu guards slots, kicks and closed. Every epoll_ctl happens under mu
	// with closed false, so the set is open.
	mu     sync.Mutex
	slots  []slot
	kicks  []func()
	run    []func() // the loop's: kicks taken from the queue
	closed bool     // no more Adds and Kicks
	gone   bool     // the set is closed: Del does nothing
	n      int      // descriptors in the set
}

// New starts a loop.
func New() (*Loop, error) {
	l := &Loop{done: make(chan struct{})}
	ep, err := rawio.NewPolledEpoll(batch, l.serve)
	if err != nil {
		return nil, fmt.Errorf("txloop: %w", err)
	}
	l.ep = ep
	go func() {
		defer close(l.done)
		ep.Run()
		l.mu.Lock()
		l.gone = true
		l.mu.Unlock()
	}()
	return l, nil
}

// NewGroup starts n loops (at least one).
func NewGroup(n int) (Group, error) {
	g := make(Group, 0, max(n, 1))
	for range max(n, 1) {
		l, err := New()
		if err != nil {
			g.Close()
			return nil, err
		}
		g = append(g, l)
	}
	return g, nil
}

// Add puts fd in the set for m. The caller must hold fd open (it is m's)
// until Del. An fd that is readable already gets its event at once.
func (l *Loop) Add(fd int, m Member) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if fd < 0 {
		return fmt.Errorf("txloop: add fd %d: %w", fd, unix.EBADF)
	}
	if fd >= len(l.slots) {
		n := max(fd+1, 2*len(l.slots), 64)
		slots := make([]slot, n)
		copy(slots, l.slots)
		l.slots = slots
	}
	s := &l.slots[fd]
	gen := s.gen + 1
	// The slot is written under mu before the event can be served
	// (serve takes mu too).
	if err := rawio.EpollCtl(l.ep.FD(), unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd), Pad: int32(gen)}); err != nil {
		return fmt.Errorf("txloop: epoll_ctl add fd %d: %w", fd, err)
	}
	s.m, s.gen = m, gen
	l.n++
	return nil
}

// Del takes fd out of the set; events of it still queued are dropped. It
// does nothing for an fd that is not in the set.
func (l *Loop) Del(fd int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone || fd >= len(l.slots) || l.slots[fd].m == nil {
		return
	}
	_ = rawio.EpollCtl(l.ep.FD(), unix.EPOLL_CTL_DEL, fd, nil)
	l.slots[fd].m = nil
	l.n--
}

// Len is how many descriptors are in the set.
func (l *Loop) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Kick runs f on the loop's goroutine, soon; false (and f never runs)
// once the loop has closed.
func (l *Loop) Kick(f func()) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.kicks = append(l.kicks, f)
	first := len(l.kicks) == 1
	l.mu.Unlock()
	if first {
		l.ep.Wake()
	}
	return true
}

// Close stops the loop: kicks queued run, every member still in the set
// gets Closed for each of its descriptors, and Close returns when the
// loop's goroutine has. Later Adds and Kicks fail.
func (l *Loop) Close() {
	l.mu.Lock()
	already := l.closed
	l.closed = true
	l.mu.Unlock()
	if !already {
		l.ep.Wake()
	}
	<-l.done
}

// serve runs on the loop's goroutine for each batch.
func (l *Loop) serve(evs []unix.EpollEvent) bool {
	for i := range evs {
		ev := &evs[i]
		if l.ep.IsWake(ev.Fd) {
			l.ep.DrainWake()
			if !l.runKicks() {
				l.shut()
				return false
			}
			continue
		}
		fd := int(ev.Fd)
		l.mu.Lock()
		var m Member
		if fd < len(l.slots) && l.slots[fd].gen == uint32(ev.Pad) {
			m = l.slots[fd].m
		}
		l.mu.Unlock()
		if m != nil {
			m.Event(fd, ev.Events)
		}
	}
	return true
}

// runKicks runs the queued kicks and reports false once the loop is to
// close.
func (l *Loop) runKicks() bool {
	l.mu.Lock()
	l.run, l.kicks = l.kicks, l.run[:0]
	closed := l.closed
	l.mu.Unlock()
	for i, f := range l.run {
		f()
		l.run[i] = nil
	}
	return !closed
}

// shut tells the members still in the set that the loop closes, then
// drops the set.
func (l *Loop) shut() {
	for fd := 0; ; fd++ {
		l.mu.Lock()
		if fd >= len(l.slots) {
			l.mu.Unlock()
			break
		}
		m := l.slots[fd].m
		l.mu.Unlock()
		if m != nil {
			m.Event(fd, Closed)
			l.mu.Lock()
			if l.slots[fd].m != nil { // the member did not take it out
				_ = rawio.EpollCtl(l.ep.FD(), unix.EPOLL_CTL_DEL, fd, nil)
				l.slots[fd].m = nil
				l.n--
			}
			l.mu.Unlock()
		}
	}
}
