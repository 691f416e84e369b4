// Package auth implements the password checks the pooler performs on both
// of its sides: MD5 (pg_authid "md5..." hashes) and SCRAM-SHA-256 (RFC 5802,
// RFC 7677) as PostgreSQL speaks it.
//
// SCRAMServer authenticates a client against a stored SCRAMVerifier;
// SCRAMClient authenticates the pooler to PostgreSQL, either from a plaintext
// password or, for passthrough, from the ClientKey a SCRAMServer recovered
// from the client's proof plus the ServerKey of the verifier. Both are pure
// state machines over message bytes: the caller frames them into
// AuthenticationSASL* / SASL*Response messages, applies the auth timeout and
// turns errors into ErrorResponse. Returned slices are freshly allocated and
// owned by the caller; input slices are not retained.
//
// Channel binding (SCRAM-SHA-256-PLUS) is not offered: clients may send the
// gs2 header "n,," or "y,,", never "p=". As in PostgreSQL, the user name in
// client-first is ignored and authorization identities are refused.
// Passwords go through SASLprep (RFC 4013) the way PostgreSQL's
// pg_saslprep does, falling back to the raw bytes when SASLprep fails.
//
// Errors wrap ErrAuthFailed when the credentials are wrong and ErrProtocol
// when a message is malformed or arrives out of order. A state machine is
// used by one goroutine; the other functions are safe for concurrent use.
// Package hba (a subpackage) decides which method applies to a connection.
//
// Specs: https://www.rfc-editor.org/rfc/rfc5802, rfc7677, rfc4013 and
// https://www.postgresql.org/docs/current/sasl-authentication.html.
package auth
