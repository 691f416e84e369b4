// Package rawio reads and writes a socket with raw system calls, for the
// hot paths of the pooler and of patroni_proxy: a loopback write that wakes PostgreSQL or the client
// runs the receiver's TCP stack inline and takes 10-20 µs, long enough for
// the Go runtime's sysmon to find the thread "in a system call", hand its P
// to another thread (a futex wake and a context switch) and keep itself
// waking every 20 µs. A raw call is invisible to the scheduler: the thread
// keeps its P for the few µs the non-blocking call takes, as a
// single-threaded event loop would. Measured: docs/benchmarks.md.
//
// Conn wraps a *net.TCPConn, *net.UnixConn or PlainSocket; its Read and Write go through
// the connection's syscall.RawConn, so they wait for readiness in Go's
// netpoller, honour deadlines and report a closed connection as the net
// package does. Other connections (a *tls.Conn) pass through unchanged.
// Writes larger than rawWriteMax use the ordinary path: copying them may
// take long enough for the hand-off to be worth it.
//
// WriteAwaitRead writes a request and waits for its answer in one
// RawConn.Read, so that the read of the answer does not first find the
// socket empty: a Read that waits does one system call that returns
// EAGAIN before every wait. WriteAwaitInput is the same for a peer that
// may have answered before it was asked (a login's challenge): bytes
// already queued end the wait.
//
// A Conn is safe for concurrent use like a net.Conn: each direction's
// scratch fields are used under that direction's mutex, uncontended on the
// hot path. It owns no buffer: Read and Write use the caller's slices only
// for the duration of the call.
//
// Peek looks at a socket's receive queue without blocking or
// consuming: whether a peer has gone (end of file, a reset) or has bytes
// waiting. The session and the server connection both ask it. It is a raw
// call too: a call the scheduler sees wakes sysmon whenever every P was
// idle, and sysmon then polls every 20 µs for a while.
//
// SetsockoptIntFD is an int socket option as a raw call (the options
// internal/daemon sets on a client it accepted with internal/fdconn).
//
// EpollCtl and EpollWait0 (Linux) are the epoll calls of the event loops
// that wait for an epoll set through the netpoller; PolledEpoll is such a
// set with its wait, its batches and an eventfd to wake it
// (internal/session's transaction core, internal/relay's loops,
// internal/idlepark and bench/floor's txpool run on it). It goes back to
// the netpoller when a look at the set finds nothing; while the set is
// never empty it yields its P every few dozen batches and waits in the
// netpoller once a millisecond (after waking itself), so that the
// goroutines only the netpoller readies run too; a set of edge-triggered
// members only (NewEdgePolledEpoll: internal/fdconn's Poller, the
// transaction core) goes back after a batch smaller than its owner's
// threshold, without that look. Its owner closes it after Run; a Wake
// after that does nothing.
//
// DupFD keeps a close-on-exec dup of a connection's socket (the session's
// deep park); TakeFD also closes the connection, handing the descriptor to
// an event loop (relay, bench/floor), and CloseFDs closes such descriptors.
//
// SetLinger, SetLingerFD, InputQueued (Linux: TIOCINQ) and CloseFD are
// the socket calls of a client's login and end as raw calls: they come
// when the process may just have gone idle, where a call the scheduler
// sees wakes a sleeping sysmon (futex, then its 20 µs polling).
//
// ReadFD and WriteFD are the one raw call each on a socket (recvfrom and
// sendto, which skip the file layer read and write go through), for code
// that runs its own RawConn callbacks (patroni_proxy's pump takes its
// buffer only once the socket is readable) or event loops.
package rawio
