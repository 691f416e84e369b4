package txloop

import "errors"

// Member owns descriptors on a Loop and hears their events there.
type Member interface {
	// Event runs on the loop's goroutine with the epoll events of fd, or
	// with Closed when the loop closes while fd is in it.
	Event(fd int, events uint32)
}

// Closed is the events value a member gets for each of its descriptors
// still in a Loop that closes. The member must take them out (Del) and
// hand their connections to someone else.
const Closed uint32 = 1 << 31

// ErrUnsupported: no event loops on this system.
var ErrUnsupported = errors.New("txloop: not supported on this system")

// ErrClosed: the loop has closed.
var ErrClosed = errors.New("txloop: closed")

// Group is a set of loops; a member stays on the one For gives it.
type Group []*Loop

// For returns the loop of the member numbered id (nil for an empty group).
func (g Group) For(id uint64) *Loop {
	if len(g) == 0 {
		return nil
	}
	return g[id%uint64(len(g))]
}

// Close closes every loop of the group.
func (g Group) Close() {
	for _, l := range g {
		l.Close()
	}
}
