// Package pgtest starts throwaway PostgreSQL clusters for integration tests.
//
// Start (or StartMain, for a cluster shared by a package's TestMain; Main also
// runs the tests and checks for leaked goroutines) gives a
// running Cluster built from the installed server binaries (PostgreSQL 15 is
// preferred; PGTEST_BINDIR overrides the search). Each cluster has its own
// data directory, unix socket directory, 127.0.0.1 port and log file, runs
// with durability turned off for speed, and is stopped in immediate mode and
// deleted when the test ends. PGTEST_KEEP=1 keeps the directory of a failed
// test; the log tail of a failed test is always printed.
//
// initdb runs once per binary version and user: the result is cached as a
// template directory under os.TempDir() and copied for every cluster (about
// 0.15 s instead of 1.2 s). Postmasters are children of the test process and
// get SIGKILL when it dies; CleanupStale (run automatically once per process)
// removes what crashed test binaries left behind. As root, every server
// program runs as the "postgres" OS user.
//
// Authentication: the superuser "postgres" is trusted over the unix socket
// (SuperDSN) and over TCP; other users authenticate over TCP with
// Options.HostAuthMethod, and users made by CreateUser with their own method.
//
// A Cluster is safe for concurrent use by parallel tests. Helpers that take a
// testing.TB call t.Fatalf on error, so they belong on the test's goroutine.
// The package does not manage Patroni, TLS or IPv6.
//
// See https://www.postgresql.org/docs/15/app-initdb.html,
// https://www.postgresql.org/docs/15/auth-pg-hba-conf.html and
// https://www.postgresql.org/docs/15/app-pgbasebackup.html.
package pgtest
