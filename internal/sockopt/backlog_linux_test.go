package sockopt

import (
	"errors"
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSetBacklogTCP: a listener's TCP_INFO reports its backlog in
// tcpi_sacked; SetBacklog changes it, also after a first change.
func TestSetBacklogTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, n := range []int{37, 5} {
		require.NoError(t, SetBacklog(ln, n))
		require.EqualValues(t, n, listenerBacklog(t, ln))
	}
}

func listenerBacklog(t *testing.T, ln net.Listener) uint32 {
	t.Helper()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	require.NoError(t, err)
	var ti *unix.TCPInfo
	var gerr error
	require.NoError(t, rc.Control(func(fd uintptr) { ti, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }))
	require.NoError(t, gerr)
	return ti.Sacked
}

// TestSetBacklogUnix: a unix listener that accepts nothing queues about
// its backlog of connections; past it a non-blocking connect is refused
// with EAGAIN. Go's own backlog (net.core.somaxconn) would take thousands.
func TestSetBacklogUnix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, SetBacklog(ln, 2))
	queued := 0
	for ; queued < 100; queued++ {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		t.Cleanup(func() { _ = unix.Close(fd) })
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			require.True(t, errors.Is(err, unix.EAGAIN), "connect: %v", err)
			break
		}
	}
	require.GreaterOrEqual(t, queued, 2)
	require.LessOrEqual(t, queued, 3, "the backlog of 2 bounds the queue (Linux takes one more)")
}

func TestSetBacklogNoSocket(t *testing.T) {
	require.Error(t, SetBacklog(fakeListener{}, 5))
}

type fakeListener struct{ net.Listener }
