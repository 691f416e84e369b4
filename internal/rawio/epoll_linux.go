package rawio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// EpollCtl and EpollWait0 are epoll_ctl, and epoll_wait with timeout 0, as
// raw system calls, for the event loops that wait for an epoll set through
// Go's netpoller (internal/idlepark, internal/relay). Neither blocks. A
// call the Go scheduler sees (unix.EpollCtl, unix.EpollWait) wakes the
// runtime's sysmon thread if it sleeps because every P was idle, and a
// woken sysmon then polls every 20 µs for a while: a park and a wake-up
// each paid for that in context switches (docs/benchmarks-passes.md, "Fifth
// pass").
func EpollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// EpollWait0 takes up to len(events) (> 0) ready events without waiting.
func EpollWait0(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
