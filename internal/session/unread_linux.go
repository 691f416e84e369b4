package session

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unreadInput reports whether the client has sent bytes not read yet (the
// kernel's receive queue, TIOCINQ): what PostgreSQL's pq_buffer_has_data
// checks after answering an SSLRequest or GSSENCRequest.
func unreadInput(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return n > 0
}
