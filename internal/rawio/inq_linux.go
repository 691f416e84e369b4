package rawio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// inputQueuedSupported: WriteAwaitInput can look at the receive queue.
const inputQueuedSupported = true

func inputQueued(fd uintptr) int {
	var n int32
	if _, _, errno := unix.RawSyscall(unix.SYS_IOCTL, fd, unix.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int(n)
}
