package fallback

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/protocol"
)

func serverErr(code, msg string) error {
	return &backend.ServerError{Notice: protocol.Notice{Severity: "FATAL", Code: code, Message: msg}}
}

func refused(addr string) error {
	return &backend.ConnectError{Addr: addr, Err: syscall.ECONNREFUSED}
}

func TestLocalDown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused", refused("/run/.s.PGSQL.5432"), true},
		{"missing socket", &backend.ConnectError{Addr: "/x", Err: syscall.ENOENT}, true},
		{"connect timeout", &backend.ConnectError{Addr: "/x", Err: context.DeadlineExceeded}, true},
		{"wrapped transport error", fmt.Errorf("pool db: %w", refused("/x")), true},
		{"shutting down", serverErr("57P03", "the database system is shutting down"), true},
		{"crash recovery", serverErr("57P03", "the database system is in recovery mode"), true},
		{"admin shutdown", serverErr("57P01", "terminating connection due to administrator command"), true},
		{"crash shutdown", serverErr("57P02", "terminating connection because of crash of another server process"), true},
		{"starting up", serverErr("57P03", "the database system is starting up"), false},
		{"not yet accepting", serverErr("57P03", "the database system is not yet accepting connections"), false},
		{"auth failed", serverErr("28P01", `password authentication failed for user "app"`), false},
		{"no hba entry", serverErr("28000", "no pg_hba.conf entry"), false},
		{"too many connections", serverErr("53300", "sorry, too many clients already"), false},
		{"no database", serverErr("3D000", `database "x" does not exist`), false},
		{"protocol error", errors.New("server /x: unexpected message 'Z' during startup"), false},
		{"no scram key", backend.ErrNoSCRAMKey, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, LocalDown(tt.err))
		})
	}
}

func TestReasonOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		timedOut bool
		want     Reason
	}{
		{"auth", serverErr("28P01", "x"), false, ReasonStartupError},
		{"starting up", serverErr("57P03", "the database system is starting up"), false, ReasonStartupError},
		{"refused", refused("h:1"), false, ReasonConnectError},
		{"own deadline", refused("h:1"), true, ReasonTimeout},
		{"deadline inside", &backend.ConnectError{Addr: "h:1", Err: context.DeadlineExceeded}, false, ReasonTimeout},
		{"other", errors.New("unexpected message"), false, ReasonStartupError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ReasonOf(tt.err, tt.timedOut))
		})
	}
}

func TestRejectedErrorText(t *testing.T) {
	t.Parallel()
	e := &RejectedError{}
	e.Counts[ReasonTimeout] = 1
	e.Counts[ReasonStartupError] = 3
	require.Equal(t, "all fallback candidates rejected (3 startup_error, 1 timeout)", e.Error())
	require.Equal(t, 4, e.Total())
	e.Counts[ReasonConnectError] = 2
	require.Equal(t, "all fallback candidates rejected (3 startup_error, 2 connect_error, 1 timeout)", e.Error())
	d := &DeadlineError{Budget: 5000 * 1e6, Err: context.DeadlineExceeded}
	require.Equal(t, "fallback: outer deadline 5000ms exceeded", d.Error())
	require.ErrorIs(t, d, context.DeadlineExceeded)
}
