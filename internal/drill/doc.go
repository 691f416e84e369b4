// Package drill measures a PostgreSQL failover as a client sees it, with
// the method of seed 003 (section 22.4.2): N workers, a fresh connection
// and a unique token per attempt, target_session_attrs=read-write, an
// exponential backoff with jitter after each failure, and afterwards a
// reconciliation of every acknowledged and unknown write against the
// primary.
//
// Run drives the workers against one DSN (a multi-host libpq-style DSN, a
// patroni_proxy port, a pg_doorman) and returns a Report: every attempt as
// an Event (outcome, phase reached, failure category, server identity), the
// Reconciliation, and the Summary (write gap = longest pause between
// acknowledged writes, first acknowledged write on a new primary, failure
// categories). The pure parts are separate so that they are tested with
// tables: Classify (outcome of one attempt), Backoff (the delay formula
// d_n = min(d_max, d_0·2^n)·J), Reconcile and Summarize.
//
// Outcomes are conservative: a failed connect is "not sent"; a
// statement-level ERROR from the server is "rejected"; any other error once
// the INSERT was handed to the connection, including a FATAL and an error
// pgconn calls safe to retry (one such token was found committed after a
// node loss), is "unknown" and only the reconciliation says whether it
// committed.
//
// Run creates one table with a random name, writes only to it and drops it
// at the end (Config.KeepTable keeps it). Tokens carry no uniqueness
// constraint, so a duplicate commit (a middleware retrying behind our back)
// is seen, not prevented. Run is safe to call concurrently with different
// Configs; a Report is immutable once returned. The package does not
// trigger the failover: the operator (or the make drill harness) does.
package drill
