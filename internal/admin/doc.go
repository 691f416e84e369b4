// Package admin is pg_doorman's admin console: the virtual databases
// "pgdoorman" and "pgbouncer" that answer PgBouncer-compatible commands
// (SHOW POOLS/POOLS_EXTENDED/POOLS_MEMORY/CLIENTS/SERVERS/STATS/DATABASES/
// USERS/LISTS/CONNECTIONS/SOCKETS/CONFIG/VERSION/LOG_LEVEL/HELP/
// POOL_COORDINATOR/POOL_SCALING/PREPARED_STATEMENTS/AUTH_QUERY,
// SET log_level, PAUSE, RESUME, RECONNECT, RELOAD, SHUTDOWN).
//
// Console is built once per daemon by New and serves every authenticated
// admin session through Serve; the session package has already sent the
// welcome. A Query is split on ';' (outside quotes and SQL comments,
// which count as spaces: pgx's Ping is "-- ping") and parsed as a whole
// before anything runs, so a syntax error anywhere runs nothing, as in
// PostgreSQL; commands then run in order until the first error. The
// extended protocol is refused with 0A000 and skipped up to Sync.
//
// The pure parts are separate: parse.go turns query text into commands,
// result.go encodes result sets, show.go, stats.go, pools_extended.go and
// connections.go build rows from plain snapshot structs that gather.go
// (and the gather* functions next to them) read from the daemon; SHOW
// SOCKETS reads /proc through internal/procnet. Column names and order
// follow PgBouncer 1.2x so that scripts and pgbouncer_exporter keep
// working (SHOW POOLS adds a trailing "paused", as pg_doorman documents,
// and "cl_idle"); numbers are int4 or int8 as PgBouncer sends them,
// milliseconds with a fraction are numeric, timestamps are text. The
// commands PgBouncer lacks take their columns from the Rust pg_doorman.
// SHOW CONNECTIONS reads its counts from daemon.Daemon.Metrics (the
// metrics exporter) when that offers ConnectionCounts. PAUSE waits at most 30 s for connections in use, then answers
// with a NOTICE while the pools stay paused.
//
// Every command the console refuses or that fails is counted through
// Metrics (New's second argument: the exporter), by one of a fixed set of
// reasons (failures.go), never by text the client sent.
//
// Console is safe for concurrent use by many admin sessions. It keeps one
// piece of state: the stats sample that SHOW STATS averages are computed
// against (see stats.go). Serve owns its session's buffers.
//
// SET log_level reads values as general.log_level does (logging.ParseLevel;
// module directives fold into one level, with a NOTICE); a bad value is
// 22023 and a WARN in the log, and the level stays.
//
// UPGRADE only asks the daemon for a binary upgrade (Daemon.RequestUpgrade):
// cmd/pg_doorman runs it as for SIGUSR2, since the new process needs the
// command line.
// Reference: https://www.pgbouncer.org/usage.html#admin-console
package admin
