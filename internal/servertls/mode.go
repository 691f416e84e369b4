package servertls

import "fmt"

// Mode is server_tls_mode, libpq's sslmode.
type Mode int

// The six modes, weakest first.
const (
	Disable Mode = iota
	Allow
	Prefer
	Require
	VerifyCA
	VerifyFull
)

var modeNames = [...]string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ParseMode reads a server_tls_mode value.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return Disable, fmt.Errorf("unknown server_tls_mode %q", s)
}

// Attempt is one way of opening a connection.
type Attempt int

const (
	// Plain sends no SSLRequest.
	Plain Attempt = iota
	// TLSIfOffered sends SSLRequest and carries on in plaintext when the
	// server answers 'N'.
	TLSIfOffered
	// TLSOnly sends SSLRequest and fails when the server answers 'N'.
	TLSOnly
)

// Step is an attempt and what may make the dialer try the next step.
type Step struct {
	Attempt Attempt
	// RetryOnServerError: an ErrorResponse during startup saying pg_hba
	// refused this encryption (SQLSTATE 28000) moves on to the next step.
	RetryOnServerError bool
	// RetryOnHandshake: a failed TLS handshake moves on to the next step.
	RetryOnHandshake bool
}

// Plan is what libpq tries for a mode, in order. Over a unix socket libpq
// never uses TLS, whatever the mode; so does pg_doorman.
//
//	disable      plaintext
//	allow        plaintext; if pg_hba refuses it, TLS (required)
//	prefer       TLS if offered, plaintext if not; if the handshake fails
//	             or pg_hba refuses the TLS login, plaintext
//	require and
//	verify-*     TLS, or fail
func Plan(m Mode, unix bool) []Step {
	if unix {
		return []Step{{Attempt: Plain}}
	}
	switch m {
	case Disable:
		return []Step{{Attempt: Plain}}
	case Allow:
		return []Step{{Attempt: Plain, RetryOnServerError: true}, {Attempt: TLSOnly}}
	case Prefer:
		return []Step{{Attempt: TLSIfOffered, RetryOnServerError: true, RetryOnHandshake: true}, {Attempt: Plain}}
	default:
		return []Step{{Attempt: TLSOnly}}
	}
}
