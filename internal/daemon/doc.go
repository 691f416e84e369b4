// Package daemon wires pg_doorman together: it owns the listeners, the pool
// registry, the session registry, the pg_hba rules in force and the retain
// task, and it implements reload, graceful shutdown and binary upgrade.
// The admin console and the metrics exporter read its state: New builds
// them from Parts (small interfaces, Admin and Metrics), so nothing is
// plugged in after construction.
//
// TCP clients are accepted by internal/fdconn (Linux): a raw accept4 on a
// dup of the listener, raw socket options (configureFD), the socket in
// fdconn's Poller while the client logs in; the session hands it on
// (session.Serve). Closing the listeners closes those dups too. Clients of
// the unix socket, and TCP clients elsewhere, are accepted by package net.
//
// Upgrade (SIGUSR2, admin UPGRADE through RequestUpgrade) starts the new
// process with the listeners (package upgrade), stops accepting, moves
// idle clients over the migration channel (session.Migrate) and drains the
// rest; in the new process Inherit hands the listeners to Listen and
// Serve adopts the clients that arrive (session.Adopt).
//
// Reload (SIGHUP, admin RELOAD) builds a new configuration from the file,
// validates it and only then swaps it in; on any error the old one stays.
// host and port are fixed at start. Shutdown (SIGTERM, admin SHUTDOWN)
// closes the listeners, closes idle server connections, closes each client
// as soon as it is between transactions, and after shutdown_timeout closes
// the rest with 58006 "pooler is shut down now".
//
// A failed accept (EMFILE) is retried after a back-off of 5 ms doubling
// up to 1 s; Shutdown, Upgrade or the end of Serve's context ends that
// wait at once. The clients an upgrade still has at shutdown_timeout, and
// closes, are counted (UpgradeStats.ForceClosed).
//
// A Daemon is safe for concurrent use; its config is swapped atomically.
package daemon
