package rawio

import "golang.org/x/sys/unix"

// The socket calls of ReadFD and WriteFD (x/sys numbers them on every
// Linux architecture, 386 included).
const (
	sysRecvfrom = unix.SYS_RECVFROM
	sysSendto   = unix.SYS_SENDTO
	sendFlags   = unix.MSG_NOSIGNAL
)
