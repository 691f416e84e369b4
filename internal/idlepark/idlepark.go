package idlepark

import (
	"errors"
	"fmt"
)

// WakeReason says why a parked connection was handed back. It is what epoll
// saw, a hint: the woken session reads the connection in every case, and
// bytes sent before a hangup are still there to read.
type WakeReason uint8

const (
	// WakeReadable: the client sent bytes.
	WakeReadable WakeReason = iota + 1
	// WakeHangup: the client closed its side (FIN); bytes it sent before
	// may still be queued.
	WakeHangup
	// WakeError: the socket has a pending error (a reset, for example).
	WakeError
	// WakeUnparked: Unpark was called.
	WakeUnparked
	// WakeClosed: the Parker was closed (shutdown).
	WakeClosed
)

func (r WakeReason) String() string {
	switch r {
	case WakeReadable:
		return "readable"
	case WakeHangup:
		return "hangup"
	case WakeError:
		return "error"
	case WakeUnparked:
		return "unparked"
	case WakeClosed:
		return "closed"
	}
	return fmt.Sprintf("WakeReason(%d)", uint8(r))
}

var (
	// ErrUnsupported is returned by Park where parking is not implemented
	// (systems other than Linux): the caller keeps its goroutine.
	ErrUnsupported = fmt.Errorf("idlepark: %w", errors.ErrUnsupported)
	// ErrClosed is returned by Park after Close.
	ErrClosed = errors.New("idlepark: parker closed")
	// ErrParked is returned by Park for a connection that is parked already.
	ErrParked = errors.New("idlepark: connection already parked")
)
