package rawio

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InputQueued is the number of bytes in nc's receive queue not read yet
// (TIOCINQ), as a raw call; 0 when nc has no socket or the call fails.
func InputQueued(nc net.Conn) int {
	n := 0
	_ = Control(nc, func(fd uintptr) { n = inputQueued(fd) })
	return n
}

// inputQueuedSupported: WriteAwaitInput can look at the receive queue.
const inputQueuedSupported = true

func inputQueued(fd uintptr) int {
	var n int32
	if _, _, errno := unix.RawSyscall(unix.SYS_IOCTL, fd, unix.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int(n)
}
