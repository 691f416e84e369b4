package rawio

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"unsafe"
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
// a call that never waits. It runs after every wait for a server, so its
// state comes from peekOps instead of a closure per call.
func Peek(nc net.Conn) PeekResult {
	op := peekOps.Get().(*peekOp)
	op.res = PeekClosed
	err := Control(nc, op.fn)
	res := op.res
	peekOps.Put(op)
	switch {
	case errors.Is(err, ErrNoSocket):
		return PeekUnknown
	case err != nil:
		return PeekClosed
	}
	return res
}

// PeekVia is Peek of a connection's socket: through nc when it is a Conn
// over the plain socket (its kept RawConn: no allocation), else through
// raw, the socket under a TLS nc.
func PeekVia(nc, raw net.Conn) PeekResult {
	if c, ok := nc.(*Conn); ok && c.Socket() {
		return Peek(c)
	}
	return Peek(raw)
}

// peekOp is one Peek's buffer and result, with its method bound once.
type peekOp struct {
	b   [1]byte
	res PeekResult
	fn  func(fd uintptr)
}

var peekOps = sync.Pool{New: func() any {
	op := &peekOp{}
	op.fn = op.peek
	return op
}}

func (op *peekOp) peek(fd uintptr) {
	// A raw call, as ReadFD: MSG_DONTWAIT never blocks, and a call the
	// scheduler sees (syscall.Recvfrom) wakes a sleeping sysmon.
	n, _, err := syscall.RawSyscall6(sysRecvfrom, fd, uintptr(unsafe.Pointer(&op.b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		op.res = PeekEmpty
	case err == 0 && n > 0:
		op.res = PeekData
	}
}
