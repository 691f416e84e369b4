// Package clienttls holds pg_doorman's TLS material for client connections
// (clients → pg_doorman): the certificate, key and client CA named by
// general.tls_certificate, tls_private_key and tls_ca_cert, the tls.Config
// built from them, the handshake rate limit of tls_rate_limit_per_second,
// and what the rest of the daemon needs to know about a finished handshake
// (SHOW CLIENTS text, the RFC 5929 tls-server-end-point hash for
// SCRAM-SHA-256-PLUS).
//
// Material is immutable once loaded. Server holds the material in force
// behind an atomic pointer: Reload (SIGHUP) swaps it, a handshake takes the
// material current when it starts and keeps it, so connections already up
// are untouched and new ones see the new certificate. Server and Limiter
// are safe for concurrent use.
//
// Policy, not configurable, as the seed says: TLS 1.2 minimum, for TLS 1.2
// the ECDHE AEAD suites of Mozilla's "intermediate" profile (Go has no DHE;
// TLS 1.3 suites are fixed by crypto/tls and all in that profile), ALPN
// "postgresql" as PostgreSQL 17 sends it.
//
// It does not speak the PostgreSQL protocol (SSLRequest, direct TLS
// detection and the refusals live in package session) and imports nothing
// of pg_doorman, so that config can check the files at load time.
//
// See https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-SSL,
// RFC 5929 section 4 and https://wiki.mozilla.org/Security/Server_Side_TLS.
package clienttls
