package relay

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

const (
	// bufSize is the most one read moves: the loop's buffer, and the most a
	// pair holds per direction while the other side does not take it.
	bufSize = 32 << 10
	// batchSize is the most events one epoll_wait takes.
	batchSize = 128
)

// Relay deals pairs to its loops in turn. See the package comment.
type Relay struct {
	loops []*loop
	next  atomic.Uint32
	wg    sync.WaitGroup
}

// New starts n event loops (at least one), each with its own goroutine.
func New(n int) (*Relay, error) {
	r := &Relay{}
	for range max(n, 1) {
		l, err := newLoop()
		if err != nil {
			r.Close()
			return nil, err
		}
		r.loops = append(r.loops, l)
		r.wg.Go(l.run)
	}
	return r, nil
}

// Add takes client and server over and starts moving bytes between them.
// Whatever happens, the caller must not use either connection again: on an
// error both are closed. ev (may be nil) hears of the pair's end on the
// loop's goroutine (see Events); it is not called when Add fails.
// A loop whose set failed is passed over while another one lives.
func (r *Relay) Add(client, server *net.TCPConn, ev Events) (*Pair, error) {
	start := int(r.next.Add(1) - 1)
	l := r.loops[start%len(r.loops)]
	for i := 1; i < len(r.loops) && l.failed.Load(); i++ {
		l = r.loops[(start+i)%len(r.loops)]
	}
	return l.add(client, server, ev)
}

// Close ends every pair (Err nil, as after Cut), stops the loops and waits
// for their goroutines. Add fails with ErrClosed afterwards.
func (r *Relay) Close() {
	for _, l := range r.loops {
		l.stop()
	}
	r.wg.Wait()
}

// loop is one event loop over one epoll set. run's goroutine owns buf,
// batch and every added pair's sockets; mu guards pairs (the
// descriptor-indexed table Add writes), cuts and closed.
type loop struct {
	set    *rawio.PolledEpoll // its eventfd: Cut and stop write it
	failed atomic.Bool        // the set failed: Add passes this loop over

	mu     sync.Mutex
	pairs  []*Pair // by descriptor
	cuts   []*Pair // Cut asked, not yet dropped
	closed bool
	ended  []*Pair // woken's scratch, owned by run's goroutine

	buf   []byte
	batch []*Pair // the pair of each event of the batch in hand
}

func newLoop() (*loop, error) {
	l := &loop{buf: make([]byte, bufSize)}
	set, err := rawio.NewPolledEpoll(batchSize, l.dispatch)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	l.set = set
	return l, nil
}

// run is the loop's goroutine: the set's Run serves events in dispatch
// until stop, or until the set fails, which ends the loop the same way but
// with every open pair's Err wrapping ErrLoopFailed. Then it closes every
// pair, and the set once nothing can reach it: dropAll marks the loop
// closed, so Add and Cut leave the set alone.
func (l *loop) run() {
	var failed error
	if err := l.set.Run(); err != nil {
		failed = fmt.Errorf("%w: %w", ErrLoopFailed, err)
		l.failed.Store(true)
	}
	l.dropAll(failed)
	_ = l.set.Close()
}

// dispatch serves one batch; false once the loop is stopped. The pairs of
// the batch are looked up before any is served: a pair dropped by one event
// frees descriptors that Add may reuse before the batch's later events for
// them are served, and those must go to the old, gone pair.
func (l *loop) dispatch(events []unix.EpollEvent) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.batch = l.batch[:0]
	for i := range events {
		var p *Pair
		if fd := int(events[i].Fd); !l.set.IsWake(events[i].Fd) && fd < len(l.pairs) {
			p = l.pairs[fd]
		}
		l.batch = append(l.batch, p)
	}
	l.mu.Unlock()
	ok := true
	for i := range events {
		ev := &events[i]
		p := l.batch[i]
		switch {
		case l.set.IsWake(ev.Fd):
			ok = l.woken() && ok
		case p != nil && !p.gone:
			side := 0
			if p.fd[1] == int(ev.Fd) {
				side = 1
			}
			if !p.handle(l, side, ev.Events) {
				l.drop(p)
			}
		}
	}
	clear(l.batch) // keep no pair alive
	return ok
}

// woken serves the eventfd: the pairs Cut asked for are dropped; false when
// stop wrote it.
func (l *loop) woken() bool {
	l.set.DrainWake()
	ended := l.ended[:0]
	l.mu.Lock()
	for i, p := range l.cuts {
		if l.dropLocked(p) {
			ended = append(ended, p)
		}
		l.cuts[i] = nil
	}
	l.cuts = l.cuts[:0]
	closed := l.closed
	l.mu.Unlock()
	notifyEnded(ended)
	clear(ended)
	l.ended = ended[:0]
	return !closed
}

// kick makes the loop serve the eventfd.
func (l *loop) kick() { l.set.Wake() }

func (l *loop) stop() {
	l.mu.Lock()
	was := l.closed
	l.closed = true
	l.mu.Unlock()
	if !was {
		l.kick()
	}
}

// add takes the descriptors of client and server over (close-on-exec dups;
// the net.Conns are closed, so the netpoller no longer watches them) and
// adds both to the set, readable.
func (l *loop) add(client, server *net.TCPConn, ev Events) (*Pair, error) {
	cfd, cerr := rawio.TakeFD(client)
	sfd, serr := rawio.TakeFD(server)
	if err := errors.Join(cerr, serr); err != nil {
		rawio.CloseFDs(cfd, sfd)
		return nil, fmt.Errorf("relay: take sockets: %w", err)
	}
	p := &Pair{l: l, ev: ev, fd: [2]int{cfd, sfd}, done: make(chan struct{}), serverEnded: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		rawio.CloseFDs(cfd, sfd)
		return nil, ErrClosed
	}
	if top := max(cfd, sfd); top >= len(l.pairs) {
		grown := make([]*Pair, max(top+1, 2*len(l.pairs), 64))
		copy(grown, l.pairs)
		l.pairs = grown
	}
	for side, fd := range p.fd {
		l.pairs[fd] = p
		p.interest[side] = unix.EPOLLIN | unix.EPOLLRDHUP
	}
	for _, fd := range p.fd {
		if err := l.set.Ctl(unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN|unix.EPOLLRDHUP); err != nil {
			l.dropLocked(p)
			return nil, fmt.Errorf("relay: epoll_ctl add: %w", err)
		}
	}
	return p, nil
}

// dropAll closes every pair, each with failed as its Err when the set
// failed (nil: stopped); run's last step.
func (l *loop) dropAll(failed error) {
	var ended []*Pair
	l.mu.Lock()
	l.closed = true
	for _, p := range l.pairs {
		if p == nil || p.gone {
			continue
		}
		if failed != nil {
			p.fail(failed)
		}
		if l.dropLocked(p) {
			ended = append(ended, p)
		}
	}
	clear(l.cuts)
	l.cuts = nil
	l.mu.Unlock()
	notifyEnded(ended)
}

func (l *loop) drop(p *Pair) {
	l.mu.Lock()
	dropped := l.dropLocked(p)
	l.mu.Unlock()
	if dropped {
		p.notifyEnded()
	}
}

// notifyEnded tells the Events of pairs just dropped, with mu not held:
// an Events may take its own locks, under which it calls Cut.
func notifyEnded(ps []*Pair) {
	for _, p := range ps {
		p.notifyEnded()
	}
}

// dropLocked closes both sockets of p (closing the last descriptor of a
// socket takes it out of the set), frees their slots and what p holds, and
// closes done; mu held, on run's goroutine or before p was published. It
// reports whether p was dropped now (the caller then tells p's Events, once
// mu is released).
func (l *loop) dropLocked(p *Pair) bool {
	if p.gone {
		return false
	}
	p.gone = true
	for side, fd := range p.fd {
		if fd < len(l.pairs) && l.pairs[fd] == p {
			l.pairs[fd] = nil
		}
		_ = unix.Close(fd)
		p.releasePend(side)
	}
	close(p.done)
	return true
}
