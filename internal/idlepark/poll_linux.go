package idlepark

import (
	"errors"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

var noDeadline time.Time

// poll is the Parker's goroutine. It does not block an OS thread in
// epoll_wait: RawConn.Read parks it in Go's netpoller until the epoll fd is
// readable (its ready list is not empty), then epoll_wait with timeout 0
// takes the events in batches. When a batch comes back short the list was
// empty at that instant; an event queued after it wakes the netpoller again
// (the netpoller's edge-triggered registration fires on every event the
// inner set queues, and RawConn.Read keeps a readiness that arrives while
// the callback runs). It returns when Close closes the file.
func (p *Parker) poll(raw syscall.RawConn) {
	defer close(p.done)
	var (
		waitErr error
		batch   []wakeup
	)
	err := raw.Read(func(fd uintptr) bool {
		for {
			n, err := rawio.EpollWait0(int(fd), p.events)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				waitErr = err
				return true
			}
			batch = p.dispatch(p.events[:n], batch[:0])
			if n < len(p.events) {
				return false
			}
		}
	})
	if waitErr != nil {
		err = waitErr
	}
	// Close shuts before it closes the file: if nothing is shut yet, poll
	// failed on its own. Nothing would wake the parked connections any
	// more, so end them now; later Parks fail and callers keep their
	// goroutines.
	wakes, first := p.shut()
	if !first {
		return
	}
	p.log.Error("idlepark: epoll wait failed, waking every parked connection", zap.Error(err), zap.Int("parked", len(wakes)))
	for _, w := range wakes {
		go w(WakeError)
	}
}

// dispatch takes the woken connections out of the set and starts their
// wakes. Events whose slot is free or of another generation are stale and
// dropped. batch is scratch space, returned for reuse.
func (p *Parker) dispatch(events []unix.EpollEvent, batch []wakeup) []wakeup {
	p.mu.Lock()
	for i := range events {
		ev := &events[i]
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
	p.mu.Unlock()
	for i := range batch {
		go batch[i].wake(batch[i].reason)
		batch[i] = wakeup{} // drop the reference: the session may end
	}
	return batch
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
