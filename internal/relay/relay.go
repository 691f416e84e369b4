package relay

import "errors"

// ErrUnsupported: the system has no epoll (New on systems other than Linux).
var ErrUnsupported = errors.New("relay: event loops need Linux epoll")

// ErrClosed: Add after Close.
var ErrClosed = errors.New("relay: closed")
