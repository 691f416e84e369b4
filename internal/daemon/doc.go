// Package daemon wires pg_doorman together: it owns the listeners, the pool
// registry, the session registry, the pg_hba rules in force, the retain
// task, the admin console and the metrics endpoint, and it implements
// reload and graceful shutdown.
//
// Reload (SIGHUP, admin RELOAD) builds a new configuration from the file,
// validates it and only then swaps it in; on any error the old one stays.
// host and port are fixed at start. Shutdown (SIGTERM, admin SHUTDOWN)
// closes the listeners, closes idle server connections, closes each client
// as soon as it is between transactions, and after shutdown_timeout closes
// the rest with 58006 "pooler is shut down now".
//
// A Daemon is safe for concurrent use; its config is swapped atomically.
package daemon
