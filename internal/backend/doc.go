// Package backend opens and runs server connections: pg_doorman's side of
// the conversation with PostgreSQL.
//
// Connect dials a unix socket or TCP address, sends the startup packet and
// authenticates with whatever the pool holds for the user: a plaintext
// server_password, the MD5 hash from the config (pass-the-hash), the SCRAM
// ClientKey recovered from a client's proof together with the ServerKey from
// the verifier (SCRAM passthrough), or nothing (trust). It collects the
// ParameterStatus values and the BackendKeyData the server sends.
//
// Over TCP, Connect follows server_tls_mode as libpq follows sslmode
// (servertls.Plan): SSLRequest, then a crypto/tls handshake with the
// material of Options.TLS, retrying without or with TLS where allow and
// prefer say so. An encrypted Conn keeps the tls.Conn, and with it the
// material it was made with, for its whole life; Alive peeks at the raw
// socket under it. TLSObserver hears of handshakes and of encrypted
// connections opened and closed. Cancel requests go in plaintext on a new
// socket, as the seed documents.
//
// A Conn is owned by exactly one goroutine at a time: the pool while idle,
// a client session while checked out. Its Reader holds one buffer, which the
// owner may release while the connection sits idle. Exec runs a simple query
// and discards its results; the pooler uses it for cleanup (ROLLBACK,
// RESET ALL, ...) and for the liveness probe. The package does not forward
// client traffic: that is the session's job.
//
// Spec: https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-START-UP
package backend
