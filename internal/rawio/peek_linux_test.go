package rawio

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tcpPair is a connected loopback pair: the side under test and its peer.
func tcpPair(t *testing.T) (local, peer *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	s, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
	return s.(*net.TCPConn), c.(*net.TCPConn)
}

func TestPeek(t *testing.T) {
	tests := []struct {
		name string
		act  func(t *testing.T, local, peer *net.TCPConn)
		want PeekResult
	}{
		{name: "nothing sent", act: func(*testing.T, *net.TCPConn, *net.TCPConn) {}, want: PeekEmpty},
		{name: "bytes waiting", act: func(t *testing.T, _, peer *net.TCPConn) {
			_, err := peer.Write([]byte("Q"))
			require.NoError(t, err)
		}, want: PeekData},
		{name: "peer closed", act: func(_ *testing.T, _, peer *net.TCPConn) { _ = peer.Close() }, want: PeekClosed},
		{name: "peer reset", act: func(_ *testing.T, _, peer *net.TCPConn) {
			_ = peer.SetLinger(0)
			_ = peer.Close()
		}, want: PeekClosed},
		{name: "closed here", act: func(_ *testing.T, local, _ *net.TCPConn) { _ = local.Close() }, want: PeekClosed},
		// A read deadline does not count: the session's idle wait leaves
		// one set, passed by the time a wait for a server ends.
		{name: "read deadline passed, nothing sent", act: func(_ *testing.T, local, _ *net.TCPConn) {
			_ = local.SetReadDeadline(time.Unix(1, 0))
		}, want: PeekEmpty},
		{name: "read deadline passed, bytes waiting", act: func(t *testing.T, local, peer *net.TCPConn) {
			_ = local.SetReadDeadline(time.Unix(1, 0))
			_, err := peer.Write([]byte("Q"))
			require.NoError(t, err)
		}, want: PeekData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			local, peer := tcpPair(t)
			tt.act(t, local, peer)
			// Loopback delivery is asynchronous: poll until the peek says
			// what the action leads to (the empty case holds at once).
			require.Eventually(t, func() bool { return Peek(local) == tt.want }, 5*time.Second, time.Millisecond)
			if tt.want == PeekData {
				_ = local.SetReadDeadline(time.Time{})
				b := make([]byte, 1)
				_, err := io.ReadFull(local, b)
				require.NoError(t, err)
				require.Equal(t, "Q", string(b), "the peek consumed nothing")
			}
		})
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.Equal(t, PeekUnknown, Peek(a), "no socket under a net.Pipe")
}

// Peek runs after every wait for a server: it allocates at most the
// RawConn that net.TCPConn.SyscallConn makes.
func TestPeekAllocs(t *testing.T) {
	local, _ := tcpPair(t)
	require.Equal(t, PeekEmpty, Peek(local))
	allocs := testing.AllocsPerRun(100, func() { Peek(local) })
	require.LessOrEqual(t, allocs, 1.0)
}

// Through a Conn over a plain socket, Peek allocates nothing; PeekVia
// peeks at the socket under a wrapper that is not one (TLS).
func TestPeekVia(t *testing.T) {
	local, peer := tcpPair(t)
	c := Wrap(local)
	require.True(t, c.Socket())
	require.Equal(t, PeekEmpty, PeekVia(c, local))
	require.Zero(t, testing.AllocsPerRun(100, func() { PeekVia(c, local) }))

	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	notSocket := Wrap(p1)
	require.False(t, notSocket.Socket())
	require.Equal(t, PeekEmpty, PeekVia(notSocket, local), "the socket under it")
	_, err := peer.Write([]byte("x"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return PeekVia(notSocket, local) == PeekData }, 5*time.Second, time.Millisecond)
}
