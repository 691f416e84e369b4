// Package session runs one client connection of pg_doorman: startup,
// authentication, and the forwarding of its transactions to server
// connections borrowed from a pool. It is the only package that sees the
// client side and the server side together.
//
// Ownership: one goroutine (Serve) owns the client socket's read side, the
// client Reader and the buffer of bytes bound for the server. In
// transaction mode, once it has written a client's request and the client
// has sent nothing more, it reads the server's answers itself (drive) and
// releases the connection to the pool at the safe point: the client's last
// message was Sync, Query, FunctionCall (or the end of a COPY started by
// one), every such message has had its ReadyForQuery, no extended-protocol
// message is waiting for a Sync, and the transaction status is idle. It
// gives a clean connection back before it writes the answer to the client
// and, when the pool handed it to a waiting client and more wait, lets
// that client's goroutine run first, so that under a full pool the server
// has its next request before this client is answered (readyForQuery). A
// drive whose server came without a queue wait writes the request and
// waits for the answer in one call (flushRequest), so pump's first read
// does not find the socket empty. So the common transaction runs on one
// goroutine with no handoff; inside a transaction block the connection
// stays attached between statements and each is driven the same way. When the server may speak unasked (COPY
// from the client, messages after the last Sync, session mode), a second
// goroutine (serverLoop) takes over the server side for the rest of the
// attachment while the client loop reads the client; it then owns the
// connection's Reader and the client-bound buffer and is the one that
// releases. Writes to the client socket go through one mutex so that a
// local answer and forwarded server bytes never interleave. While the
// client loop drives, a client that disconnects is noticed when the
// server answers (as PostgreSQL itself notices), and Kill aborts the
// server connection so that shutdown_timeout and KILL still cut at once.
//
// While a client sits idle between transactions it holds no server
// connection and, after its release (idleRelease, 100 ms, doubling up to
// 800 ms for a client that keeps coming back soon after a park:
// adaptRelease), no read buffer (the Reader releases it; a client whose
// last wait outlasted its release starts the next one without it) and,
// over plaintext, after parkAfter (4) releases no goroutine: it is parked
// in Env.Parker and resume continues it in a new goroutine. A client that
// has sent nothing within freshGrace (20 ms) of its welcome is parked
// then, without that wait, and deep: its net.Conn is closed and the Parker holds a dup of the socket
// (parkedSocket), which resume makes a net.Conn again (net.FileConn, then
// Env.ConfigureSocket). A parked client also drops its Reader, a rewriter
// with nothing in it and the rawio wrapper of its socket; resume makes
// them again.
// Socket reads and writes go through internal/rawio.
//
// A TCP client arrives from the daemon as an *fdconn.Conn (internal/fdconn:
// its login's calls are raw, and it waits in fdconn's Poller). The session
// hands it on once it knows where it goes: the transaction core takes the
// descriptor at adoption (takeSocket, fdconn's Detach), and a session that
// will run in its own goroutine moves it into Go's netpoller first
// (promote, under mu: a TLS client before its handshake, the admin
// console, and at startRun any session the core cannot adopt). Clients of
// the unix socket are net.Conns from the start.
//
// With Env.Core (general.transaction_loop, on by default on Linux) the
// transaction core owns plaintext transaction-mode sessions instead,
// from their first idle point: one event loop reads their sockets into
// one buffer, attaches servers (clients that wait queue in the loop, FIFO
// per pool, and a released server goes straight to the oldest: handOn),
// forwards both ways with the same accounting,
// rewriter, parameter sync and release rule (accountLocked,
// accountReadyLocked, safePoint), and releases. What it does not run, a
// message not whole in one read, one that is not a request at a
// transaction's start, a cancelled wait, a migration, a TLS server, no
// waiting allowed (query_wait_timeout 0), it
// hands back to a goroutine (resumeFromCore) with the bytes it read, at a
// point where the server is between messages; the session comes back at
// its next idle point. The goroutine that adopts a session puts its socket
// in the loop's set itself and leaves the session for the loop to take
// before its next batch (Core.add), so an adoption does not wake the loop;
// Kill and Migrate post to the loop and wake it. Its files: the loop
// itself (core_linux.go), one transaction from the client's bytes to the
// release (core_tx_linux.go), the queue and the sentinels
// (core_wait_linux.go), how clients and servers leave it
// (core_end_linux.go), adoption (core_adopt_linux.go) and hand-back
// (core_handback_linux.go).
//
// In transaction mode with prepared_statements a rewriter (rewriter.go)
// sits on both directions: Client renames the client's statements for the
// attached server and injects the Parses it lacks, Server hides the
// answers to those and the pooler inserts its own; the session's mu
// guards it.
//
// Errors a client is told (login refusals, no server connection) are
// *ClientError (SQLSTATE, message, cause for the log), sent by refuse; an
// attachment's failures leave pump as errors and attachmentFailed handles
// them in one place.
//
// Login follows PostgreSQL 15 where a client could tell the difference: an
// unknown user gets a mock SCRAM exchange, an unknown database is named only
// after authentication, failures are logged at WARN (rate-limited). The
// method follows the seed's order (chooseMethod, methods.go): Talos, pg_hba,
// PAM, SCRAM/MD5, JWT; users a pool does not list are looked up through its
// auth_query (authquery.go). Until the welcome a connection closes with
// FIN; tcp_so_linger applies after it, except to a close after a last word
// (a FATAL error), which is graceful.
//
// Spec: https://www.postgresql.org/docs/current/protocol-flow.html and
// seed 002 (pool modes, authentication, pg_hba).
package session
