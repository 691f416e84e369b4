package idlepark

import (
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// poll is the Parker's goroutine: the set's Run serves batches in serve
// until Close (or until the set fails), then the set is closed. The set
// waits in Go's netpoller, so no OS thread blocks in epoll_wait.
func (p *Parker) poll() {
	defer close(p.done)
	err := p.set.Run()
	// Close shuts before it wakes the set: if nothing is shut yet, the set
	// failed on its own. Shut first in any case, so that no Park or Unpark
	// touches the set once it is closed.
	wakes, first := p.shut()
	if cerr := p.set.Close(); cerr != nil {
		p.closeErr = fmt.Errorf("idlepark: %w", cerr)
	}
	if !first {
		return
	}
	// Nothing would wake the parked connections any more, so end them
	// now; later Parks fail and callers keep their goroutines.
	p.log.Error("idlepark: epoll wait failed, waking every parked connection", zap.Error(err), zap.Int("parked", len(wakes)))
	for _, w := range wakes {
		go w(WakeError)
	}
}

// serve is one batch of the set: the eventfd's event (Close's Wake) is
// cleared, the other events are dispatched; false once the Parker is
// closed.
func (p *Parker) serve(events []unix.EpollEvent) bool {
	var open bool
	p.batch, open = p.dispatch(events, p.batch[:0])
	return open
}

// dispatch takes the woken connections out of the set and starts their
// wakes, and reports whether the Parker is still open. Events whose slot
// is free or of another generation are stale and dropped. batch is scratch
// space, returned for reuse.
func (p *Parker) dispatch(events []unix.EpollEvent, batch []wakeup) ([]wakeup, bool) {
	p.mu.Lock()
	for i := range events {
		ev := &events[i]
		if p.set.IsWake(ev.Fd) {
			p.set.DrainWake()
			continue
		}
		fd := int(ev.Fd)
		if p.closed || fd < 0 || fd >= len(p.slots) {
			continue
		}
		s := &p.slots[fd]
		if s.wake == nil || s.gen != uint32(ev.Pad) {
			continue
		}
		batch = append(batch, wakeup{wake: p.release(fd), reason: reasonOf(ev.Events)})
	}
	open := !p.closed
	p.mu.Unlock()
	for i := range batch {
		go batch[i].wake(batch[i].reason)
		batch[i] = wakeup{} // drop the reference: the session may end
	}
	return batch, open
}

// reasonOf names what epoll reported; an error wins over a hangup, a hangup
// over plain data.
func reasonOf(events uint32) WakeReason {
	switch {
	case events&unix.EPOLLERR != 0:
		return WakeError
	case events&(unix.EPOLLHUP|unix.EPOLLRDHUP) != 0:
		return WakeHangup
	}
	return WakeReadable
}
