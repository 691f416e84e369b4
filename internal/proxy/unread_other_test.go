//go:build !linux

package proxy

import (
	"net"
	"testing"
)

// unread needs TIOCINQ; the tests run on Linux only (docs/architecture.md),
// this keeps the package's tests building elsewhere.
func unread(t *testing.T, _ *net.TCPConn) int {
	t.Helper()
	t.Skip("TIOCINQ is Linux's")
	return 0
}
