package backend

import (
	"net"
	"syscall"
	"time"

	"github.com/doorman-go/doorman/internal/rawio"
)

// setUserTimeout sets TCP_USER_TIMEOUT so a dead peer is noticed while data
// is unacknowledged, not after the kernel's 15-minute retransmission limit.
func setUserTimeout(tc *net.TCPConn, d time.Duration) {
	if d <= 0 {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, 0x12 /* TCP_USER_TIMEOUT */, int(d.Milliseconds()))
	})
}

// Alive reports, without blocking, whether the server side of an idle
// connection is still open: a peek that finds EOF or unexpected bytes (a
// FATAL sent before the server went away) means it is not.
func (c *Conn) Alive() bool {
	switch rawio.PeekVia(c.nc, c.raw) {
	case rawio.PeekEmpty, rawio.PeekUnknown:
		return true
	}
	return false
}
