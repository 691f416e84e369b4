// Package pgbench reads what pgbench writes: the summary it prints at the
// end of a run, the error lines on its stderr and the per-transaction log
// files of -l, and turns latency samples into percentiles.
//
// ParseSummary reads the summary from stdout, ParseStderr counts aborted
// clients and keeps the distinct error texts, ReadLatencies reads one -l
// log file (one line per transaction: client_id transaction_no time
// script_no time_epoch time_us [schedule_lag] [retries]), ReadLatenciesIn
// only the transactions that ended inside a Window, and Summarize gives
// p50/p95/p99 by the nearest-rank method. Everything is a pure function
// over bytes: the package starts no processes and holds no state, so it is
// safe for concurrent use.
//
// The formats are those of pgbench 15; see
// https://www.postgresql.org/docs/15/pgbench.html ("Per-Transaction
// Logging" and "Typical Output").
package pgbench
