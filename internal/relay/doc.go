// Package relay moves bytes between pairs of TCP sockets on event loops, so
// that a forwarded connection costs no goroutine per direction and a
// transaction wakes no goroutine: patroni_proxy's data path.
//
// A Relay owns a few loops (New(n)); each loop owns one epoll set, one
// goroutine and one read buffer. The loop's goroutine waits for the epoll fd
// through Go's netpoller (no OS thread blocked in epoll_wait) and takes the
// events with epoll_wait(0) in batches (rawio.PolledEpoll, which
// internal/idlepark runs on too). Add takes a client and a server
// connection over: it keeps dups of their descriptors
// and closes the net.Conns, so Go's netpoller no longer watches them and
// every readiness goes to the loop alone. From then on the loop owns both
// sockets and every byte in flight; the caller holds a *Pair to learn how it
// ended (Done, ServerEnded, Err) and to end it (Cut).
//
// Bytes read from one side are written to the other at once from the loop's
// buffer. Only what the other side does not take is copied into the pair
// (at most one read, 32 KiB, per direction, from a sync.Pool), and while it
// waits that side is not read: memory is bounded by the number of pairs,
// never by what a peer sends or fails to read. A clean EOF is passed on as
// a half-close (shutdown SHUT_WR); the pair ends when both sides have sent
// EOF, on any error, or on Cut, and then both sockets are closed. A loop
// whose epoll set fails ends all its pairs with an Err wrapping
// ErrLoopFailed and takes no more; Add deals to the loops still alive.
//
// Relay and Pair methods are safe for concurrent use. The package does not
// dial, route, parse what it moves or terminate TLS. On systems other than
// Linux New returns ErrUnsupported and callers copy with goroutines. See
// epoll(7) and shutdown(2).
package relay
