package rawio

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
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
// The members are meant to be level-triggered; the set itself is
// edge-triggered in the netpoller, which fires only when the set's ready
// list becomes non-empty. A member left ready after a batch (a read that
// filled the buffer, an interest just widened) may be queued without such
// an edge, so serve calls More and Run looks once more before it waits.
//
// Run's goroutine owns the batch; Ctl may be called from it or before Run
// starts. Run closes the set and the eventfd when it returns; Wake after
// that does nothing.
type PolledEpoll struct {
	fd     int
	wakeFD int
	file   *os.File // fd, registered with the netpoller
	events []unix.EpollEvent
	serve  func(events []unix.EpollEvent) bool
	more   bool
	pollFn func(uintptr) bool

	// wakeMu orders Wake against Run closing the eventfd: a Wake that
	// comes late (its caller checked its own state, then Run ended) must
	// not write to the number, which the kernel may have handed to
	// another descriptor by then.
	wakeMu sync.Mutex
	ended  bool
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
	}
	p.pollFn = p.poll
	return p, nil
}

// Ctl adds (unix.EPOLL_CTL_ADD), changes or removes fd's interest in
// events; the event's Fd is fd.
func (p *PolledEpoll) Ctl(op, fd int, events uint32) error {
	var ev *unix.EpollEvent
	if op != unix.EPOLL_CTL_DEL {
		ev = &unix.EpollEvent{Events: events, Fd: int32(fd)}
	}
	return EpollCtl(p.fd, op, fd, ev)
}

// Wake makes the set ready with the eventfd's event; once Run has
// returned it does nothing.
func (p *PolledEpoll) Wake() {
	p.wakeMu.Lock()
	defer p.wakeMu.Unlock()
	if p.ended {
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
	var b [8]byte
	_, _ = ReadFD(uintptr(p.wakeFD), b[:])
}

// More makes Run take one more batch before it waits (see the type's
// comment).
func (p *PolledEpoll) More() { p.more = true }

// Run serves batches until serve returns false or the set fails, then
// closes the set and the eventfd.
func (p *PolledEpoll) Run() {
	if raw, err := p.file.SyscallConn(); err == nil {
		_ = raw.Read(p.pollFn)
	}
	_ = p.file.Close()
	p.wakeMu.Lock()
	p.ended = true
	_ = unix.Close(p.wakeFD)
	p.wakeMu.Unlock()
}

// poll takes batches with EpollWait0 until one comes back short and left
// nothing behind, then lets the netpoller wait (false); true ends Run.
func (p *PolledEpoll) poll(fd uintptr) bool {
	for {
		n, err := EpollWait0(int(fd), p.events)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return true
		}
		p.more = false
		if !p.serve(p.events[:n]) {
			return true
		}
		if n < len(p.events) && !p.more {
			return false
		}
	}
}
