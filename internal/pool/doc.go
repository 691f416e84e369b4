// Package pool holds the idle server connections of one (database, user) pair
// and hands them to clients in strict FIFO order.
//
// A Pool[T] owns its idle connections; a caller that got a *Conn[T] from
// Acquire owns it until it calls Release (the connection is healthy and clean)
// or Destroy (it is broken or dirty beyond repair). Using a Conn after handing
// it back is a bug and panics with "BUG: ...".
//
// The acquire path is built around four rules:
//   - Direct handoff: a released connection goes straight to the oldest
//     waiter through that waiter's own channel. There is no broadcast wake-up
//     and no LIFO of waiters, so the order in which clients get served is the
//     order in which they asked.
//   - Bounded burst gate: at most MaxParallelCreates connects to the backend
//     are in flight per pool at any moment. A waiter that finds the pool below
//     its size but the gate full waits in the same FIFO queue and is granted
//     either a returned connection or a create slot, whichever comes first.
//   - Epochs: Reconnect bumps the pool's epoch; idle connections of older
//     epochs are closed at once, busy ones when they come back.
//   - Hedged connects (hedge.go): a client that takes a slot connects in
//     the background; once the connect has taken hedgeAfter it also takes
//     a returned connection, first in line, and a new connection nobody
//     waits for joins the pool. A slow PostgreSQL then delays the pool's
//     growth, not single clients.
//
// A waiter's stages (anticipation, gate budget, create-only) and its
// deadline are moved on by the waiter's timer under Pool.mu (stageTimer),
// not by the goroutine that waits: everything that ends or changes a wait
// arrives on the waiter's channel, and the goroutine waits for that
// channel, its context and its stop channel only.
//
// A pool at its size makes a client wait on every transaction, so a wait
// that ends in a handoff allocates nothing: the queue is linked through
// the waiters, waiters (with their channel and their timer) are
// recycled, and AcquireWithin takes its deadline and stop channel as
// Bounds instead of a derived context. A context is built from Bounds only
// for the paths that hand one on: a connect, a coordinator permit, an idle
// check.
//
// The pool knows nothing of the PostgreSQL wire protocol: it creates
// connections through a Connector and checks idle ones through an optional
// Checker. It is safe for concurrent use; all state is guarded by Pool.mu.
// Time is read through an injectable clock so that lifetime and idle rules
// can be tested deterministically; a wait's timer runs on the real clock.
package pool
