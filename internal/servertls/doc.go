// Package servertls holds the TLS material pg_doorman uses towards
// PostgreSQL (server_tls_*): the mode, the CA bundle and the optional
// client certificate for mTLS, and turns them into a crypto/tls client
// configuration with libpq's sslmode semantics.
//
// Load reads and parses the files once; the resulting *Material is
// immutable and safe for concurrent use. pg_doorman loads it with the
// configuration (config.Load), so a reload (SIGHUP) builds new Material
// from the files on disk and the pools dial new connections with it while
// connections already open keep the tls.Conn, and therefore the material,
// they were made with. A bad file fails the load and the old material stays.
//
// Plan tells the dialer what to try for a mode (disable, allow, prefer,
// require, verify-ca, verify-full) as libpq does it; Config builds the
// tls.Config of one attempt; Describe renders a connection's version and
// cipher the way PgBouncer's SHOW SERVERS tls column does.
//
// The package does no I/O besides reading the files in Load, and knows
// nothing of the PostgreSQL protocol (SSLRequest is the backend package's).
//
// Spec: seed 002, "Серверный TLS" and server_tls_*; libpq sslmode:
// https://www.postgresql.org/docs/current/libpq-ssl.html#LIBPQ-SSL-PROTECTION
package servertls
