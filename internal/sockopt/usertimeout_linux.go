package sockopt

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// UserTimeoutSupported: Linux has TCP_USER_TIMEOUT.
const UserTimeoutSupported = true

func setUserTimeout(fd int, d time.Duration) error {
	return rawio.SetsockoptIntFD(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds())) // raw: set at the accept (rawio doc)
}
