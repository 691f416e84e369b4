package relay

import "errors"

// ErrUnsupported: the system has no epoll (New on systems other than Linux).
var ErrUnsupported = errors.New("relay: event loops need Linux epoll")

// ErrClosed: Add after Close, or to a loop whose epoll set failed.
var ErrClosed = errors.New("relay: closed")

// ErrLoopFailed is the end of every pair of a loop whose epoll set failed
// (epoll_wait or the netpoller's wait for the set returned an error): the
// pair's Err and Events.Ended wrap it with the set's error. That loop takes
// no more pairs (Add returns ErrClosed for it).
var ErrLoopFailed = errors.New("relay: event loop failed")

// Events hears of a pair's end, on the goroutine of the loop that serves
// it, so each call must return at once and must not block on anything the
// loop's other pairs wait for; it may call Cut on any pair (the loop holds
// none of its locks during these calls). ServerEnded comes first if at all,
// as the pair's ServerEnded channel is closed; Ended once, after Done is
// closed, with Err's error.
type Events interface {
	ServerEnded()
	Ended(err error)
}
