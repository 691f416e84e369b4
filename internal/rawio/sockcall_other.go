//go:build !linux

package rawio

import "golang.org/x/sys/unix"

// The socket calls of ReadFD and WriteFD. Without MSG_NOSIGNAL a write to
// a closed peer raises SIGPIPE, which the Go runtime ignores for sockets.
const (
	sysRecvfrom = unix.SYS_RECVFROM
	sysSendto   = unix.SYS_SENDTO
	sendFlags   = 0
)
