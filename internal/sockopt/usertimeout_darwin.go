package sockopt

import (
	"time"

	"golang.org/x/sys/unix"
)

// UserTimeoutSupported: macOS has TCP_RXT_CONNDROPTIME.
const UserTimeoutSupported = true

func setUserTimeout(fd int, d time.Duration) error {
	secs := int((d + time.Second - 1) / time.Second)
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_RXT_CONNDROPTIME, secs)
}
