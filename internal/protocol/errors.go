package protocol

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed is wrapped by every decoding error caused by the bytes themselves.
	ErrMalformed = errors.New("malformed message")
	// ErrMessageTooLarge is matched (errors.Is) by *MessageTooLargeError.
	ErrMessageTooLarge = errors.New("message too large")
	// ErrInvalidLength reports a declared message length below the 4 bytes of the length itself.
	ErrInvalidLength = errors.New("invalid message length")
	// ErrNoUser is returned by DecodeStartup when the startup packet has no "user"; the
	// text is PostgreSQL's (FATAL 28000).
	ErrNoUser = errors.New("no PostgreSQL user name specified in startup packet")
	// ErrUnsupportedAuthentication reports a known authentication request this package
	// does not implement (Kerberos, GSSAPI, SSPI).
	ErrUnsupportedAuthentication = errors.New("unsupported authentication method")
)

// MessageTooLargeError reports a declared length above the Reader's (or startup) limit.
// It is returned before anything is allocated for the message.
type MessageTooLargeError struct {
	Type   byte // 0 for an untyped startup packet
	Length int  // declared length, including the 4 length bytes
	Max    int
}

func (e *MessageTooLargeError) Error() string {
	if e.Type == 0 {
		return fmt.Sprintf("startup packet length %d exceeds limit %d", e.Length, e.Max)
	}
	return fmt.Sprintf("message %q length %d exceeds limit %d", e.Type, e.Length, e.Max)
}

// Is makes errors.Is(err, ErrMessageTooLarge) true.
func (e *MessageTooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// UnsupportedProtocolError is returned by DecodeStartup for a protocol major version other
// than 3. Callers answer it with FATAL SQLSTATE 0A000 (feature_not_supported), as PostgreSQL does.
type UnsupportedProtocolError struct {
	Major, Minor uint16
}

func (e *UnsupportedProtocolError) Error() string {
	return fmt.Sprintf("unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", e.Major, e.Minor)
}

// SQLState is the SQLSTATE PostgreSQL uses for this condition.
func (e *UnsupportedProtocolError) SQLState() string { return "0A000" }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// decodeErr adds the message name to a decoding error.
func decodeErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("decode %s: %w", name, err)
}
