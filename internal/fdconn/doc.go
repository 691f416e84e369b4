// Package fdconn owns accepted TCP client sockets from accept4 to close with
// raw system calls, so that a client's login never makes a call the Go
// scheduler sees.
//
// Why: a system call made through package syscall (net's accept4 and
// close among them) wakes the runtime's sysmon thread whenever it sleeps
// because every P was idle, and a woken sysmon then polls every 20 µs for
// a while. Between logins the process is mostly idle, so every login paid
// for a sysmon wake-up: about a fifth of its CPU (docs/benchmarks-passes.md,
// "Twenty-ninth pass"). A net.Conn cannot be made or closed without such
// calls, so the sockets this package accepts are not net.Conns of package
// net.
//
// Poller is one epoll set, waited for through Go's netpoller
// (rawio.PolledEpoll) by one goroutine that it owns; every Conn is in it,
// edge-triggered, from Accept until Close or Detach. A Conn's Read, Write and
// its syscall.RawConn make raw calls and, when the socket is not ready, wait
// for the Poller's word on a channel, with the deadlines a net.Conn has.
// Errors are those of package net: a *net.OpError around net.ErrClosed,
// os.ErrDeadlineExceeded or the system call's errno.
//
// Accept takes the next connection of a *net.TCPListener with a raw
// accept4 in a RawConn read of the listener, so that the listener keeps
// working with everything that knows a net.Listener (its close, binary
// upgrade's descriptor passing).
//
// A waiting Conn costs a wake of the Poller's goroutine and an
// epoll_wait(0) more than a net.Conn does. That is cheap for the few
// messages of a login; a session that goes on running in its own goroutine
// (TLS, session mode, the admin console) calls Promote, which moves the
// descriptor into Go's netpoller (an os.File of it: no dup, its options
// untouched) while the Conn stays what the session holds. A session the
// transaction core adopts takes the descriptor with Detach instead.
//
// What it does not do: socket options (the caller sets them on the
// descriptor, internal/daemon), TLS, anything of the protocol. Outside
// Linux NewPoller fails and the caller accepts with package net.
package fdconn
