// Package idlepark holds idle client connections without a goroutine: a
// session whose client sits between transactions parks the socket in one
// epoll set (Linux) and lets its goroutine exit, so that an idle client costs
// a few bytes of bookkeeping instead of a goroutine stack.
//
// A Parker owns one epoll set and the one goroutine (poll) that drains it;
// poll waits for the epoll fd through Go's netpoller, so no OS thread is
// blocked in epoll_wait. Park hands a connection to the Parker together with
// a continuation wake: from the moment Park returns nil until wake runs, the
// Parker owns the connection and nobody may read, write or close it. wake runs
// exactly once, in a new goroutine, when the socket becomes readable (data,
// EOF, reset, error), when Unpark is called, or when the Parker closes; the
// reason says which. The socket is removed from the set before wake runs, so
// the woken goroutine owns the connection again and reads it normally.
// Parker is safe for concurrent use.
//
// The package never reads, writes or closes a parked socket and holds no
// buffer: the caller drops its read buffer before parking and gets a new one
// when woken. It only parks what the kernel can see: a *tls.Conn may hold
// decrypted bytes that the socket no longer shows (and a bufio.Reader bytes it
// already read), so TLS connections and connections with buffered input must
// not be parked, nor their underlying net.Conn.
//
// On other systems Park returns ErrUnsupported and the caller keeps its
// goroutine. See epoll(7) for EPOLLONESHOT and EPOLLRDHUP.
package idlepark
