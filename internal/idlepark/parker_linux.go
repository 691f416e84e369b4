package idlepark

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// parkEvents: readable, peer closed its side, and one event per Park. Level
// triggered, so bytes that arrived before Park wake at once. EPOLLERR and
// EPOLLHUP are always reported.
const parkEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// batchSize is how many events one epoll_wait takes.
const batchSize = 128

// slot is the bookkeeping of one fd number: 16 bytes, kept in a slice
// indexed by fd (the kernel hands out the lowest free number, so fds are
// dense).
type slot struct {
	wake func(WakeReason) // nil: nothing parked under this fd
	// gen counts the Parks of this fd number and travels in the epoll event:
	// an event of an earlier registration (the fd was unparked, closed and
	// its number reused while the event sat in a batch) never matches.
	gen uint32
}

type wakeup struct {
	wake   func(WakeReason)
	reason WakeReason
}

// Parker holds idle connections in one epoll set. See the package comment.
type Parker struct {
	log *zap.Logger
	// set is the epoll set, waited for through Go's netpoller by poll's
	// goroutine (rawio.PolledEpoll). Close wakes it to end poll, which
	// closes the set.
	set      *rawio.PolledEpoll
	done     chan struct{} // closed when poll has returned
	closeErr error         // the set's close, written by poll before done
	parked   atomic.Int64

	// mu guards closed and slots. Every epoll_ctl on the set happens under
	// mu with closed false, and poll closes the set only after closed is
	// set, so the set is open and is never a reused number.
	mu     sync.Mutex
	closed bool
	slots  []slot

	batch []wakeup // dispatch's scratch, owned by poll's goroutine
}

// New creates the epoll set and starts the goroutine that drains it. log may
// be nil.
func New(log *zap.Logger) (*Parker, error) {
	if log == nil {
		log = zap.NewNop()
	}
	p := &Parker{log: log, done: make(chan struct{})}
	set, err := rawio.NewPolledEpoll(batchSize, p.serve)
	if err != nil {
		return nil, fmt.Errorf("idlepark: %w", err)
	}
	p.set = set
	go p.poll()
	return p, nil
}

// Park registers c and returns at once. From a nil return until wake runs,
// the Parker owns c: the caller must not read, write or close it (to take it
// back early, call Unpark). wake runs exactly once, in a new goroutine, after
// c has left the epoll set. On error wake never runs and the caller still
// owns c. Parking a connection that is parked already returns ErrParked.
//
// c must show all its pending input to the kernel: no *tls.Conn underneath,
// no buffered reader in front (see the package comment).
func (p *Parker) Park(c syscall.Conn, wake func(WakeReason)) error {
	if wake == nil {
		panic("BUG: idlepark: Park with a nil wake")
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("park: %w", err)
	}
	var perr error
	// Control holds the conn's fd open, so the number cannot be reused
	// while it is added.
	if err := raw.Control(func(fd uintptr) { perr = p.park(int(fd), wake) }); err != nil {
		return fmt.Errorf("park: %w", err)
	}
	return perr
}

func (p *Parker) park(fd int, wake func(WakeReason)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if fd >= len(p.slots) {
		p.grow(fd)
	}
	s := &p.slots[fd]
	gen := s.gen + 1
	// The slot is written under mu before the event can be dispatched
	// (dispatch takes mu too), so an fd that is readable at once still
	// finds its slot.
	err := p.set.CtlPad(unix.EPOLL_CTL_ADD, fd, parkEvents, int32(gen))
	switch {
	case errors.Is(err, unix.EEXIST) && s.wake != nil:
		return ErrParked
	case err != nil:
		return fmt.Errorf("park: epoll_ctl add fd %d: %w", fd, err)
	}
	if old := s.wake; old != nil {
		// The add succeeded although the slot was taken: the earlier
		// connection under this number was closed while parked (which the
		// kernel drops from the set). Its owner broke the contract; end
		// its session rather than leak it.
		p.log.Error("BUG: idlepark: parked connection was closed while parked", zap.Int("fd", fd))
		go old(WakeError)
		p.parked.Add(-1)
	}
	s.wake, s.gen = wake, gen
	p.parked.Add(1)
	return nil
}

// grow makes slots long enough for fd. Called with mu held.
func (p *Parker) grow(fd int) {
	n := max(fd+1, 2*len(p.slots), 64)
	slots := make([]slot, n)
	copy(slots, p.slots)
	p.slots = slots
}

// Unpark takes c out of the set and runs wake(WakeUnparked) in a new
// goroutine. It reports false, and does nothing, if c is not parked (never
// was, or its wake has already been started): in both cases the goroutine
// running wake owns c, never the caller of Unpark.
func (p *Parker) Unpark(c syscall.Conn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var wake func(WakeReason)
	if err := raw.Control(func(fd uintptr) { wake = p.unpark(int(fd)) }); err != nil || wake == nil {
		return false
	}
	go wake(WakeUnparked)
	return true
}

func (p *Parker) unpark(fd int) func(WakeReason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || fd >= len(p.slots) || p.slots[fd].wake == nil {
		return nil
	}
	return p.release(fd)
}

// release deletes fd from the set and frees its slot, returning the wake.
// Called with mu held and closed false.
func (p *Parker) release(fd int) func(WakeReason) {
	s := &p.slots[fd]
	if err := p.set.Ctl(unix.EPOLL_CTL_DEL, fd, 0); err != nil {
		// ENOENT: closed behind our back. The wake still runs, so the
		// session ends when it finds the connection closed.
		p.log.Error("idlepark: epoll_ctl del", zap.Int("fd", fd), zap.Error(err))
	}
	wake := s.wake
	s.wake = nil
	p.parked.Add(-1)
	return wake
}

// Len returns how many connections are parked.
func (p *Parker) Len() int { return int(p.parked.Load()) }

// Close stops the Parker: later Parks return ErrClosed, every connection
// still parked is woken with WakeClosed, the goroutine returns and the epoll
// set is closed. Safe to call more than once and concurrently.
func (p *Parker) Close() error {
	wakes, _ := p.shut()
	p.set.Wake() // poll sees closed and ends; a no-op once the set is closed
	<-p.done
	for _, w := range wakes {
		go w(WakeClosed)
	}
	return p.closeErr
}

// shut marks the Parker closed and empties the set's bookkeeping, returning
// the wakes still pending; first is false (and wakes nil) if it was shut
// already. The kernel drops the registrations when the set is closed.
func (p *Parker) shut() (wakes []func(WakeReason), first bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false
	}
	p.closed = true
	for i := range p.slots {
		if w := p.slots[i].wake; w != nil {
			wakes = append(wakes, w)
			p.slots[i].wake = nil
		}
	}
	p.parked.Add(-int64(len(wakes)))
	return wakes, true
}
