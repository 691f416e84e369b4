package session

import (
	"net"
	"syscall"
)

// clientLeft reports, without blocking, whether the client has gone away:
// its socket shows end of file or an error (a reset) with nothing unread
// before it. Unread bytes (pipelined messages, a Terminate, TLS records)
// are left for the client loop, as PostgreSQL runs a query it has read
// whatever follows it.
func clientLeft(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	left := false
	var b [1]byte
	_ = raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		case err != nil, n == 0:
			left = true
		}
		return true // never wait
	})
	return left
}
