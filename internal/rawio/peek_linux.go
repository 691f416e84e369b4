package rawio

import (
	"errors"
	"net"
	"syscall"
)

// PeekResult is what one non-blocking peek at a socket found.
type PeekResult uint8

const (
	// PeekUnknown: not a connection with a socket underneath.
	PeekUnknown PeekResult = iota
	// PeekEmpty: nothing to read, the connection is open.
	PeekEmpty
	// PeekData: bytes are waiting to be read.
	PeekData
	// PeekClosed: end of file, a pending error (a reset), or the socket is
	// closed here.
	PeekClosed
)

// Peek looks at nc's receive queue without blocking and without consuming
// anything (MSG_PEEK of one byte). It goes through Control, not the
// RawConn's Read: a read deadline of nc, pending or passed, has no say over
// a call that never waits.
func Peek(nc net.Conn) PeekResult {
	res := PeekClosed
	var b [1]byte
	err := Control(nc, func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			res = PeekEmpty
		case err == nil && n > 0:
			res = PeekData
		}
	})
	switch {
	case errors.Is(err, ErrNoSocket):
		return PeekUnknown
	case err != nil:
		return PeekClosed
	}
	return res
}
