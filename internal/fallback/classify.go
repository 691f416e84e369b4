package fallback

import (
	"context"
	"errors"
	"strings"

	"github.com/doorman-go/doorman/internal/backend"
)

// Reason is why a fallback candidate was rejected. Its String is the label
// used in logs, in RejectedError and in metrics.
type Reason int

// Reasons, in the order RejectedError lists them.
const (
	ReasonStartupError Reason = iota // the server answered with an error (auth, 57P03, protocol)
	ReasonConnectError               // refused, reset, unreachable: no server at all
	ReasonTimeout                    // fallback_connect_timeout elapsed
	numReasons
)

func (r Reason) String() string {
	switch r {
	case ReasonStartupError:
		return "startup_error"
	case ReasonConnectError:
		return "connect_error"
	case ReasonTimeout:
		return "timeout"
	default:
		return "unknown"
	}
}

// LocalDown reports whether a failed connect to the local server means the
// server is gone, so that fallback must start. It is true for transport
// failures (*backend.ConnectError: refused, missing socket, reset, the
// pool's connect timeout) and for errors a dying server sends during
// startup: 57P01/57P02 and 57P03 "shutting down" / "in recovery mode" (crash
// recovery). It is false for auth errors and every other server error, in
// particular 57P03 "the database system is starting up" (or "not yet
// accepting connections"): a live local server that will be ready soon.
// The 57P03 texts are matched in English (lc_messages=C, Patroni's usual).
func LocalDown(err error) bool {
	var se *backend.ServerError
	if errors.As(err, &se) {
		switch se.Code {
		case "57P01", "57P02": // admin_shutdown, crash_shutdown
			return true
		case "57P03": // cannot_connect_now
			m := strings.ToLower(se.Message)
			return strings.Contains(m, "shutting down") || strings.Contains(m, "recovery mode")
		}
		return false
	}
	var ce *backend.ConnectError
	return errors.As(err, &ce)
}

// ReasonOf classifies a candidate's failure. ctxTimedOut is whether the
// candidate's own deadline (fallback_connect_timeout) had passed.
func ReasonOf(err error, ctxTimedOut bool) Reason {
	if ctxTimedOut || errors.Is(err, context.DeadlineExceeded) {
		return ReasonTimeout
	}
	var se *backend.ServerError
	if errors.As(err, &se) {
		return ReasonStartupError
	}
	var ce *backend.ConnectError
	if errors.As(err, &ce) {
		return ReasonConnectError
	}
	return ReasonStartupError
}
