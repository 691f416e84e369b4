package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
)

// TestServerFailureReason: every class of failure to get a server
// connection has its reason, and every reason is one the metric is made
// with.
func TestServerFailureReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{pooler.ErrWaitTimeout, "wait_timeout"},
		{fmt.Errorf("permit: %w", coordinator.ErrExhausted), "db_limit"},
		{fmt.Errorf("fallback: %w", fallback.ErrNoCandidates), "fallback"},
		{fmt.Errorf("acquire: %w", pool.ErrClosed), "pool_closed"},
		{&backend.ServerError{Notice: protocol.Notice{Code: "28P01", Message: "password authentication failed"}}, "server_error"},
		{&backend.TLSError{Reason: "refused"}, "server_tls"},
		{backend.ErrNoSCRAMKey, "no_scram_key"},
		{context.Canceled, "shutdown"},
		{errors.New("dial tcp: connection refused"), "connect"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, serverFailure(tt.err).Reason)
			require.True(t, slices.Contains(AcquireFailureReasons, tt.want))
		})
	}
	require.Len(t, AcquireFailureReasons, len(tests), "a reason no error gives")
}
