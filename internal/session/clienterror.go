package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/pooler"
)

// ClientError is what a client is told when pg_doorman refuses or ends
// it, at login or when no server connection can be had: a PostgreSQL
// SQLSTATE and a message that holds no internal detail. Err, when set, is
// the cause, for the log only.
type ClientError struct {
	Code, Message string
	Err           error
	// Reason is serverFailure's class of the failure (one of
	// AcquireFailureReasons), for the metrics; empty elsewhere.
	Reason string
}

func (e *ClientError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + " " + e.Message
}

func (e *ClientError) Unwrap() error { return e.Err }

// refuse sends e to the client as FATAL and returns it: the session ends
// with it, closing gracefully so that the client reads it.
func (s *Session) refuse(e *ClientError) error {
	s.fatal(e.Code, e.Message)
	return e
}

// refusef is refuse with a formatted message and no cause.
func (s *Session) refusef(code, format string, args ...any) error {
	return s.refuse(&ClientError{Code: code, Message: fmt.Sprintf(format, args...)})
}

// serverFailure is the ClientError of a failure to get a server
// connection for the client: what the server said, or what went wrong on
// the way, without the internal detail the log has. The one place where
// such failures are classified.
func serverFailure(err error) *ClientError {
	ce := func(reason, code, msg string) *ClientError {
		return &ClientError{Code: code, Message: msg, Err: err, Reason: reason}
	}
	var se *backend.ServerError
	var te *backend.TLSError
	switch {
	case errors.Is(err, pooler.ErrWaitTimeout):
		return ce("wait_timeout", "08P01", "query_wait_timeout")
	case errors.Is(err, coordinator.ErrExhausted):
		return ce("db_limit", "53300", err.Error())
	case isFallbackFailure(err):
		return ce("fallback", "08006", fallback.ClientMessage)
	case errors.Is(err, pool.ErrClosed):
		return ce("pool_closed", "08P01", "pool is closed: database or user removed, or pg_doorman is shutting down")
	case errors.As(err, &se):
		return ce("server_error", se.Code, se.Message)
	case errors.As(err, &te):
		return ce("server_tls", "08006", fmt.Sprintf("could not connect to server: TLS to the server failed (server_tls_mode %s: %s)", te.Mode, te.Reason))
	case errors.Is(err, backend.ErrNoSCRAMKey):
		return ce("no_scram_key", "08P01", "SCRAM passthrough needs a client to log in with SCRAM first (set server_password or use scram-sha-256 auth)")
	case errors.Is(err, context.Canceled):
		return ce("shutdown", "58006", "pooler is shut down now")
	}
	return ce("connect", "08006", "could not connect to server")
}

// AcquireFailureReasons are the reasons serverFailure gives.
var AcquireFailureReasons = []string{"wait_timeout", "db_limit", "fallback", "pool_closed", "server_error", "server_tls", "no_scram_key", "shutdown", "connect"}

// AcquireMetrics is implemented by Env.Metrics hooks that count logged-in
// clients ended because their transaction got no server connection, by
// reason (AcquireFailureReasons).
type AcquireMetrics interface {
	AcquireFailed(reason string)
}
