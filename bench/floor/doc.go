// Package floor holds bare TCP forwarders: the floor under the pooler's CPU
// per transaction. A forwarder moves bytes between each accepted client and
// its own connection to the target and understands nothing of them, so what
// it spends per transaction is what the I/O shape alone costs; `make bench`
// (section 7 of docs/benchmarks.md) runs pgbench through each shape next to
// PgBouncer and pg_doorman to show how much of pg_doorman's cost is the shape
// and how much is the pooler's own work.
//
// Five shapes (Mode):
//   - ModeGoroutines: two goroutines per connection, one per direction, with
//     internal/rawio's raw read and write calls under Go's netpoller, as
//     pg_doorman's session and patroni_proxy's pump do;
//   - ModeEpollThread: event loops that each block an OS thread in
//     epoll_wait, as a C event loop does (PgBouncer's shape, with Go's
//     runtime around it);
//   - ModeEpollNetpoller: event loops whose epoll set is itself waited for
//     through Go's netpoller (internal/idlepark's trick), taking events with
//     epoll_wait(0) and raw read and write calls, so no thread blocks in a
//     system call: internal/relay, patroni_proxy's forwarding, itself;
//   - ModeTxPool: a transaction pooler reduced to its bones on one loop of
//     the ModeEpollNetpoller kind (txpool_linux.go): it follows message
//     boundaries (scanner), lends one of Config.PoolSize server connections
//     to a client from its Query or Sync to the idle ReadyForQuery that
//     answers it, and queues clients FIFO; clients log in through a server
//     connection of their own (startup.go), which then joins the pool or is
//     closed. It is what an event-loop pg_doorman would cost before any of
//     its features: no statement rewriting, parameters, timeouts, TLS;
//   - ModeUring: one loop that blocks its OS thread in io_uring_enter
//     (uring_linux.go), each socket's receive and every send an entry of
//     one io_uring, so that one system call submits a batch's sends and
//     waits for the next completions; a receive's bytes are sent on in a
//     send linked to the side's next receive into the same buffer. It
//     measures what batching the socket calls would save where a system
//     call is dear (docs/benchmarks-passes.md, "Forty-first pass").
//
// Each event loop owns the connections it was given and its one read
// buffer; bytes a peer does not take at once wait in a per-direction pending
// buffer while the other side is not read (the memory of a connection is
// bounded by one read). It is a measuring tool, Linux only, not a proxy to
// deploy: no timeouts, no limits on connections, no metrics.
package floor
