package fdconn

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// connEvents is what a Conn is registered for, and connWriteEvents what
// once a write found its socket full: the runtime's netpoller registers
// its sockets for the latter from the start. Edge-triggered: the Poller
// passes each edge on once, and a Conn that finds its socket not ready
// after a word waits for the next.
const (
	connEvents      = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET
	connWriteEvents = connEvents | unix.EPOLLOUT
)

// batchSize is how many events one epoll_wait takes.
const batchSize = 128

// ErrClosed is what Accept and a waiting Conn return once the Poller is
// closed (wrapped in a *net.OpError by a Conn).
var ErrClosed = errors.New("fdconn: poller closed")

// slot is the bookkeeping of one fd number, in a slice indexed by fd (the
// kernel hands out the lowest free number, so fds are dense).
type slot struct {
	c *Conn
	// gen counts the registrations of this fd number and travels in the
	// event: an event of an earlier registration (the number closed and
	// reused while the event sat in a batch) never matches.
	gen uint32
}

// Poller waits for the readiness of its Conns. See the package comment.
type Poller struct {
	set      *rawio.PolledEpoll
	done     chan struct{} // closed when run has returned
	stopped  chan struct{} // closed once the set is done: every wait ends
	stopOnce sync.Once
	closeErr error // the set's close, written by run before done

	// mu guards closed and slots. Every epoll_ctl on the set happens under
	// mu with closed false, and run closes the set only after closed is
	// set, so the set is open and is never a reused number.
	mu     sync.Mutex
	closed bool
	slots  []slot
}

// NewPoller creates the epoll set and starts the goroutine that drains it.
// The owner calls Close once no Conn of it is used any more.
func NewPoller() (*Poller, error) {
	p := &Poller{done: make(chan struct{}), stopped: make(chan struct{})}
	set, err := rawio.NewEdgePolledEpoll(batchSize, batchSize, p.serve)
	if err != nil {
		return nil, fmt.Errorf("fdconn: %w", err)
	}
	p.set = set
	go p.run()
	return p, nil
}

func (p *Poller) run() {
	defer close(p.done)
	_ = p.set.Run() // ends when serve sees closed, or the set fails
	p.mu.Lock()
	p.closed = true // a failed set takes no more Ctl calls
	p.mu.Unlock()
	p.stop()
	p.closeErr = p.set.Close()
}

// stop ends every wait, now and later.
func (p *Poller) stop() { p.stopOnce.Do(func() { close(p.stopped) }) }

// serve passes a batch of edges on to the Conns' waiters.
func (p *Poller) serve(events []unix.EpollEvent) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for i := range events {
		ev := &events[i]
		if p.set.IsWake(ev.Fd) {
			p.set.DrainWake()
			continue
		}
		fd := int(ev.Fd)
		if fd < 0 || fd >= len(p.slots) {
			continue
		}
		s := &p.slots[fd]
		if s.c == nil || s.gen != uint32(ev.Pad) {
			continue
		}
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			s.c.rd.poke()
		}
		if ev.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			s.c.wr.poke()
		}
	}
	return true
}

// register adds c's socket to the set.
func (p *Poller) register(c *Conn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if c.fd >= len(p.slots) {
		slots := make([]slot, max(c.fd+1, 2*len(p.slots), 64))
		copy(slots, p.slots)
		p.slots = slots
	}
	s := &p.slots[c.fd]
	gen := s.gen + 1
	// The slot is written under mu before an event can be served (serve
	// takes mu too), so a socket that is ready at once finds its Conn.
	if err := p.set.CtlPad(unix.EPOLL_CTL_ADD, c.fd, connEvents, int32(gen)); err != nil {
		return fmt.Errorf("epoll_ctl add fd %d: %w", c.fd, err)
	}
	s.c, s.gen = c, gen
	return nil
}

// watchWrites adds EPOLLOUT to c's registration. With EPOLLET the
// modification reports the socket's state at once: a socket writable by
// then gives its edge.
func (p *Poller) watchWrites(c *Conn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if c.fd >= len(p.slots) || p.slots[c.fd].c != c {
		return net.ErrClosed
	}
	if err := p.set.CtlPad(unix.EPOLL_CTL_MOD, c.fd, connWriteEvents, int32(p.slots[c.fd].gen)); err != nil {
		return fmt.Errorf("epoll_ctl mod fd %d: %w", c.fd, err)
	}
	return nil
}

// unregister takes c's socket out of the set, while the caller holds it
// open: a dup of it elsewhere (the transaction core's) would otherwise keep
// it in the set.
func (p *Poller) unregister(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || c.fd >= len(p.slots) || p.slots[c.fd].c != c {
		return
	}
	p.slots[c.fd].c = nil
	_ = p.set.Ctl(unix.EPOLL_CTL_DEL, c.fd, 0)
}

// Len is how many Conns are in the set.
func (p *Poller) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for i := range p.slots {
		if p.slots[i].c != nil {
			n++
		}
	}
	return n
}

// Close stops the Poller: every Conn still waiting, and every later wait,
// ends with ErrClosed; the goroutine returns and the set is closed. The
// Conns' sockets stay open for their owners to close. Safe to call more
// than once.
func (p *Poller) Close() error {
	p.mu.Lock()
	p.closed = true
	for i := range p.slots {
		p.slots[i].c = nil
	}
	p.mu.Unlock()
	p.stop()
	p.set.Wake() // serve sees closed and ends; a no-op once the set is closed
	<-p.done
	return p.closeErr
}
