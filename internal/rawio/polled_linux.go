package rawio

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PolledEpoll is an event loop's epoll set, waited for through Go's
// netpoller so that no OS thread blocks in epoll_wait: Run parks its
// goroutine in a RawConn read of the epoll descriptor and, once the set has
// events, takes them in batches with EpollWait0 and hands each batch to the
// serve function given to NewPolledEpoll. The set holds an eventfd that
// Wake writes from any goroutine; serve recognises its event with IsWake
// and clears it with DrainWake.
//
// The set itself is edge-triggered in the netpoller, which fires only when
// the set's ready list becomes non-empty. With level-triggered members
// (NewPolledEpoll: relay's loops, idlepark) Run therefore waits only after
// a look that found nothing: a member left ready after a batch (a read
// that filled the buffer, an interest just widened) is in the next look,
// as is whatever became ready while serve ran, which a busy loop finds
// there without a park and a netpoller wake-up (docs/benchmarks-passes.md,
// "Twenty-seventh pass"). With edge-triggered members (NewEdgePolledEpoll)
// a batch that did not fill its events emptied the ready list, so Run may
// wait without that look; their owner reports to itself what a
// level-triggered member would be reported again for. A loop that never
// finds the set empty yields its P every yieldEvery batches, so that
// goroutines queued behind it run, and after serving for yieldAfter it
// wakes its own set and waits in the netpoller once, so that goroutines
// only the netpoller readies run too.
//
// Run's goroutine owns the batch; Ctl may be called from it, before Run
// starts, or by an owner that orders its calls before Close itself. The
// owner calls Close once Run has returned; Wake after Close does nothing.
type PolledEpoll struct {
	fd     int
	wakeFD int
	file   *os.File // fd, registered with the netpoller
	events []unix.EpollEvent
	serve  func(events []unix.EpollEvent) bool
	pollFn func(uintptr) bool
	// edge: every member is edge-triggered (NewEdgePolledEpoll), so a
	// batch that did not fill events emptied the ready list, and whatever
	// comes after it fires the set's edge in the netpoller again: poll
	// may go back to the netpoller without a look that finds nothing.
	// It does after a batch of fewer than relook events (edgeWaits).
	edge   bool
	relook int
	// yieldAfter is how long poll serves before it lets the netpoller
	// run (the constant yieldAfter; tests change it).
	yieldAfter time.Duration
	yields     atomic.Uint64 // how often it did (tests)

	// closeMu orders Wake against Close: a Wake that comes late (its
	// caller checked its own state, then the loop ended and was closed)
	// must not write to the eventfd's number, which the kernel may have
	// handed to another descriptor by then.
	closeMu sync.Mutex
	closed  bool
	err     error // what ended Run, for Run to return
}

// NewPolledEpoll makes the set and its eventfd; serve gets each batch of
// at most batch events on Run's goroutine and returns false to end Run.
func NewPolledEpoll(batch int, serve func(events []unix.EpollEvent) bool) (*PolledEpoll, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	err = unix.SetNonblock(epfd, true)
	if err == nil {
		err = EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)})
	}
	if err != nil {
		_ = unix.Close(wfd)
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("epoll set: %w", err)
	}
	p := &PolledEpoll{
		fd: epfd, wakeFD: wfd,
		// Non-blocking, so os.NewFile registers it with the netpoller.
		file:   os.NewFile(uintptr(epfd), "polled-epoll"),
		events: make([]unix.EpollEvent, max(batch, 1)),
		serve:  serve,

		yieldAfter: yieldAfter,
	}
	// SetReadDeadline fails with os.ErrNoDeadline if the netpoller refused
	// the descriptor; Run would then never wait.
	if err := p.file.SetReadDeadline(time.Time{}); err != nil {
		_ = p.file.Close()
		_ = unix.Close(wfd)
		return nil, fmt.Errorf("register epoll set with the netpoller: %w", err)
	}
	p.pollFn = p.poll
	return p, nil
}

// NewEdgePolledEpoll is NewPolledEpoll for a set whose members are all
// registered with EPOLLET (the eventfd aside, which DrainWake empties).
// After a batch of fewer than relook events the loop waits in the
// netpoller at once, without the look that would find nothing: one
// epoll_wait per wake-up instead of two. A batch of relook events or more
// is followed by another look, as on a level-triggered set: on a busy set
// more have likely come while it was served, and a look is cheaper than a
// wait in the netpoller and a wake-up. relook = batch looks again only
// after a full batch (internal/fdconn's Poller); the transaction core
// uses 2, so that a quiet loop woken for one client's event goes back to
// wait at once (docs/benchmarks-passes.md, "Thirty-fourth pass").
func NewEdgePolledEpoll(batch, relook int, serve func(events []unix.EpollEvent) bool) (*PolledEpoll, error) {
	p, err := NewPolledEpoll(batch, serve)
	if err == nil {
		p.edge = true
		p.relook = max(1, min(relook, len(p.events)))
	}
	return p, err
}

// edgeWaits reports whether an edge-triggered set's loop goes back to the
// netpoller after a batch of n events out of batch, rather than look
// again. A full batch may have left events behind: it always looks again.
func edgeWaits(n, batch, relook int) bool {
	return n < batch && n < relook
}

// Ctl adds (unix.EPOLL_CTL_ADD), changes or removes fd's interest in
// events; the event's Fd is fd.
func (p *PolledEpoll) Ctl(op, fd int, events uint32) error { return p.CtlPad(op, fd, events, 0) }

// CtlPad is Ctl with pad in the event's Pad, which serve sees again in
// fd's events (a generation, say, that tells an event of an earlier
// registration of the same number).
func (p *PolledEpoll) CtlPad(op, fd int, events uint32, pad int32) error {
	var ev *unix.EpollEvent
	if op != unix.EPOLL_CTL_DEL {
		ev = &unix.EpollEvent{Events: events, Fd: int32(fd), Pad: pad}
	}
	return EpollCtl(p.fd, op, fd, ev)
}

// Wake makes the set ready with the eventfd's event; after Close it does
// nothing.
func (p *PolledEpoll) Wake() {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if p.closed {
		return
	}
	one := [8]byte{1}
	_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(p.wakeFD), uintptr(unsafe.Pointer(&one[0])), 8)
}

// IsWake reports whether an event's Fd is the eventfd's.
func (p *PolledEpoll) IsWake(fd int32) bool { return int(fd) == p.wakeFD }

// DrainWake clears the eventfd, so that its event is not seen again until
// the next Wake.
func (p *PolledEpoll) DrainWake() {
	var b [8]byte // an eventfd, not a socket: read(2), not ReadFD
	_, _, _ = syscall.RawSyscall(syscall.SYS_READ, uintptr(p.wakeFD), uintptr(unsafe.Pointer(&b[0])), 8)
}

// Run serves batches until serve returns false (Run returns nil) or the
// set fails (the error). The set stays open until Close.
func (p *PolledEpoll) Run() error {
	raw, err := p.file.SyscallConn()
	if err != nil {
		return fmt.Errorf("epoll set: %w", err)
	}
	if err := raw.Read(p.pollFn); err != nil {
		return fmt.Errorf("wait for the epoll set: %w", err)
	}
	return p.err
}

// Close closes the set and the eventfd, once Run has returned (or was
// never called). Later calls, and Wake, do nothing.
func (p *PolledEpoll) Close() error {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.file.Close()
	_ = unix.Close(p.wakeFD)
	if err != nil {
		return fmt.Errorf("close epoll set: %w", err)
	}
	return nil
}

// yieldEvery is how many batches in a row poll serves before it yields
// the P (runtime.Gosched) to the goroutines queued behind it.
const yieldEvery = 32

// yieldAfter bounds how long poll serves a set that is never empty
// without letting the netpoller run. runtime.Gosched puts the loop back
// in the global run queue, which the scheduler takes before it polls the
// network, so on one P a goroutine that waits for a socket (a login in
// internal/fdconn's Poller, a TLS session) was readied only by sysmon's
// poll, after up to 10 ms per wait. The scheduling latency that made
// showed internal/procs a P that needed help, and it moved to two Ps,
// which cost pg_doorman about a third more CPU per transaction at 100
// clients (docs/benchmarks-passes.md, "Thirty-first pass"). After yieldAfter
// poll wakes its own set (Wake) and returns to the netpoller's wait: the
// scheduler runs what is queued, polls the network, which finds this set
// ready with the rest, and the loop goes on.
const yieldAfter = time.Millisecond

// yieldCheckEvents is how many events poll serves between looks at the
// clock.
const yieldCheckEvents = 64

// poll serves batches until a look finds the set empty, or for
// yieldAfter (then it wakes the set first), and lets the netpoller wait
// (false); true ends Run.
func (p *PolledEpoll) poll(fd uintptr) bool {
	start, events := time.Now(), 0
	for served := 1; ; served++ {
		n, err := EpollWait0(int(fd), p.events)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			p.err = fmt.Errorf("epoll_wait: %w", err)
			return true
		}
		if n == 0 {
			return false
		}
		if !p.serve(p.events[:n]) {
			return true
		}
		if p.edge && edgeWaits(n, len(p.events), p.relook) {
			return false
		}
		if events += n; events >= yieldCheckEvents {
			events = 0
			if time.Since(start) >= p.yieldAfter {
				p.yields.Add(1)
				p.Wake() // the set's edge: the netpoller readies the loop again
				return false
			}
		}
		if served%yieldEvery == 0 {
			runtime.Gosched()
		}
	}
}
