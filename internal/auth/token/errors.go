package token

import "errors"

// ErrInvalidToken is wrapped by every error VerifyJWT and VerifyTalos
// return: the client presented a token the pooler does not accept.
var ErrInvalidToken = errors.New("invalid token")

// Error is a token refusal. Its text is fixed, short and safe to send to
// the client; it never contains the token or any part of it. The exported
// values below are the only instances, so callers compare with errors.Is.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrInvalidToken) hold for every refusal.
func (e *Error) Unwrap() error { return ErrInvalidToken }

// The refusals. Verify* return exactly one of these (never wrapped), so
// err.Error() is the client message.
var (
	ErrTokenTooLong      = &Error{"token too long"}
	ErrTokenMalformed    = &Error{"token malformed"}
	ErrTokenAlgorithm    = &Error{"token algorithm not allowed, RS256 required"}
	ErrTokenSignature    = &Error{"token signature invalid"}
	ErrTokenNoExpiry     = &Error{"token has no expiry"}
	ErrTokenExpired      = &Error{"token expired"}
	ErrTokenNotValidYet  = &Error{"token not valid yet"}
	ErrTokenClaims       = &Error{"token claims invalid"}
	ErrTokenUserMismatch = &Error{"token user mismatch"}
	ErrMissingKeyID      = &Error{"token has no key id"}
	ErrUnknownKeyID      = &Error{"unknown key id"}
	// ErrDatabaseNotAllowed: the requested database is not listed in
	// general.talos.databases.
	ErrDatabaseNotAllowed = &Error{"database not enabled for talos authentication"}
	// ErrNoRole carries the seed's wording verbatim.
	ErrNoRole = &Error{"Token may not contain valid roles for the requested databases"}
)
