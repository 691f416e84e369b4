package sockopt

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSetUserTimeout reads TCP_USER_TIMEOUT back from a fresh socket per
// case; the kernel's default is 0.
func TestSetUserTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, tt := range []struct {
		name string
		d    time.Duration
		want int
	}{
		{"zero leaves the default", 0, 0},
		{"negative leaves the default", -time.Second, 0},
		{"milliseconds", 1500 * time.Millisecond, 1500},
		{"a minute", time.Minute, 60000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			tc := c.(*net.TCPConn)
			require.NoError(t, SetUserTimeout(tc, tt.d))
			raw, err := tc.SyscallConn()
			require.NoError(t, err)
			var got int
			var gerr error
			require.NoError(t, raw.Control(func(fd uintptr) {
				got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
			}))
			require.NoError(t, gerr)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestSetUserTimeoutClosed: a closed connection is an error, not a panic.
func TestSetUserTimeoutClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Error(t, SetUserTimeout(c.(*net.TCPConn), time.Second))
}
