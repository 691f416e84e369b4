package proxy

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// unread is how many bytes c's receive queue holds (TIOCINQ).
func unread(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	require.NoError(t, err)
	var n int
	require.NoError(t, raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }))
	return n
}
