package backend

import (
	"net"
	"syscall"
	"time"
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
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		case err != nil, n == 0, n > 0:
			alive = false
		}
		return true // never wait
	})
	return err == nil && alive
}
