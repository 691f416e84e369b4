// Package txloop runs event loops that own sockets between system calls:
// a Loop is one goroutine over one rawio.PolledEpoll set (waited for
// through Go's netpoller), and a Member is whoever owns the descriptors it
// adds, told of their events on that goroutine. internal/session moves
// transaction-mode clients onto loops, so that a transaction that needs
// no waiting runs without a goroutine of its own.
//
// The package owns the epoll set, the loop's goroutine, the table that
// maps a descriptor to its member (with a generation number carried in
// each event, so an event queued for an earlier registration of the same
// number is dropped) and the queue of functions other goroutines ask the
// loop to run (Kick). It never reads, writes or closes a member's
// descriptors: the member does, on the loop's goroutine, and takes a
// descriptor out (Del) before anyone else may close it.
//
// Registrations are edge-triggered (EPOLLET): a member reads until a read
// comes back short or would block, or remembers that it did not.
//
// Linux only; New returns ErrUnsupported elsewhere.
package txloop
