package backend

import (
	"errors"
	"fmt"

	"github.com/doorman-go/doorman/internal/protocol"
)

// ErrNoSCRAMKey means the server wants SCRAM and the pool has neither a
// server_password nor a ClientKey from an earlier client login yet.
var ErrNoSCRAMKey = errors.New("server asks for SCRAM and no client has authenticated yet to recover the ClientKey (passthrough), and no server_password is set")

// ConnectError is a failure to reach or talk to the server at all: refused,
// timed out, reset. It is what Patroni-assisted fallback reacts to.
type ConnectError struct {
	Addr string
	Err  error
}

func (e *ConnectError) Error() string { return fmt.Sprintf("connect to %s: %v", e.Addr, e.Err) }
func (e *ConnectError) Unwrap() error { return e.Err }

// ServerError is an ErrorResponse sent by PostgreSQL.
type ServerError struct {
	protocol.Notice
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("server error %s: %s: %s", e.Code, e.Severity, e.Message)
}

// IsAuthError reports whether the server rejected our credentials.
func (e *ServerError) IsAuthError() bool {
	return e.Code == "28P01" || e.Code == "28000"
}
