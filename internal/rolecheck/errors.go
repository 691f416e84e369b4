package rolecheck

import (
	"errors"
	"fmt"
)

// ErrNoPassword reports that the server asked for a password and none was given.
var ErrNoPassword = errors.New("server requested a password but none was given")

// ErrNoHotStandby reports a server that sent no in_hot_standby ParameterStatus
// (PostgreSQL before 14, or a pooler that hides it).
var ErrNoHotStandby = errors.New("server did not report in_hot_standby (PostgreSQL < 14 or a pooler that hides it; use method recovery)")

// ServerError is an ErrorResponse from the server. It carries no password:
// PostgreSQL never echoes one.
type ServerError struct {
	Severity string
	Code     string // SQLSTATE
	Message  string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Severity, e.Code, e.Message)
}

// AuthFailed reports whether the server refused the credentials
// (invalid_password 28P01 or invalid_authorization_specification 28000).
func (e *ServerError) AuthFailed() bool { return e.Code == "28P01" || e.Code == "28000" }
