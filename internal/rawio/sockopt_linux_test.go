package rawio

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func getLinger(t *testing.T, c *net.TCPConn) *unix.Linger {
	t.Helper()
	var l *unix.Linger
	var gerr error
	require.NoError(t, Control(c, func(fd uintptr) { l, gerr = unix.GetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER) }))
	require.NoError(t, gerr)
	return l
}

// TestSetLinger reads SO_LINGER back after the raw call, as SetLinger of
// net.TCPConn would leave it.
func TestSetLinger(t *testing.T) {
	for _, tt := range []struct {
		name  string
		sec   int
		onoff int32
		secs  int32 // -1: not checked
	}{
		{"off", -1, 0, -1}, // the kernel keeps the old time with lingering off
		{"reset on close", 0, 1, 0},
		{"linger 5 s", 5, 1, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			local, _ := tcpPair(t)
			require.NoError(t, local.SetLinger(7)) // something to overwrite
			require.NoError(t, SetLinger(local, tt.sec))
			l := getLinger(t, local)
			require.Equal(t, tt.onoff, l.Onoff)
			if tt.secs >= 0 {
				require.Equal(t, tt.secs, l.Linger)
			}
		})
	}
}

func TestSetLingerNoSocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.ErrorIs(t, SetLinger(a, 0), ErrNoSocket)
	require.Error(t, SetLingerFD(-1, 0))
}

// TestInputQueued counts what the peer sent and the side under test did
// not read yet; a connection without a socket counts nothing.
func TestInputQueued(t *testing.T) {
	local, peer := tcpPair(t)
	require.Zero(t, InputQueued(local))
	_, err := peer.Write([]byte("hello"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return InputQueued(local) == 5 }, 5*time.Second, time.Millisecond)
	buf := make([]byte, 2)
	_, err = local.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 3, InputQueued(local))
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.Zero(t, InputQueued(a))
}

// TestCloseFD closes a duplicated descriptor: the peer sees the end once
// the original is closed too, and a second close fails (EBADF).
func TestCloseFD(t *testing.T) {
	local, peer := tcpPair(t)
	fd, err := DupFD(local)
	require.NoError(t, err)
	require.NoError(t, local.Close())
	require.NoError(t, SetLingerFD(fd, -1))
	require.NoError(t, CloseFD(fd))
	require.ErrorIs(t, CloseFD(fd), unix.EBADF)
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := peer.Read(make([]byte, 1))
	require.Zero(t, n)
	require.Error(t, err) // EOF: the socket is closed
}
