// Package leaderlock answers one question for pg_doorman's
// server_login_retry on a Patroni node: does the Patroni beside this
// pg_doorman hold the leader lock right now?
//
// While it does, its PostgreSQL is the cluster's primary even when it
// refuses connections or comes back in recovery: it is restarting in place
// (patronictl restart, or a crash with primary_start_timeout > 0) and will
// be the primary again, so a client waiting for a server connection is
// better served by waiting than by an error. Once the lock is released (a
// switchover, a failover) or Patroni does not answer (node loss), waiting
// would only keep the client from the new primary.
//
// A Gate asks GET <api>/primary (200 = held, 503 = not held, anything else
// = unknown, which counts as not held) at most once per TTL however many
// callers ask: concurrent callers share one request in flight and its
// answer is kept for the TTL. The request runs in a goroutine of its own,
// bounded by a timeout, so that a caller who stops waiting does not cut it
// short for the others. The Gate counts its answers (Stats). It is safe
// for concurrent use and does not log; it does not decide what to do with
// the answer.
//
// Spec: seed 003 section 22.4 (the layers converge), issue 16; Patroni's
// REST API https://patroni.readthedocs.io/en/latest/rest_api.html.
package leaderlock
