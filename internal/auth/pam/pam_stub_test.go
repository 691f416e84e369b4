//go:build !(linux && cgo && pam)

package pam

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStubUnavailable(t *testing.T) {
	t.Parallel()
	require.False(t, Available())
	a := New(1)
	err := a.Authenticate(context.Background(), "pg_doorman", "alice", "secret")
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "go build -tags pam")
	require.ErrorContains(t, err, "libpam0g-dev")
	require.Zero(t, a.InFlight())
}
