package proxy

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/rawio"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	a, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	require.NoError(t, err)
	b, ok := <-accepted
	require.True(t, ok, "accept failed")
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// forwarded is a client and a server end with forwardPumps running between
// the proxy's two connections; done reports its end.
type forwarded struct {
	client, server *net.TCPConn
	cut            chan struct{}
	done           chan bool
}

func startForward(t *testing.T) *forwarded {
	t.Helper()
	client, proxyIn := tcpPair(t)
	proxyOut, server := tcpPair(t)
	f := &forwarded{client: client, server: server, cut: make(chan struct{}), done: make(chan bool, 1)}
	go func() { f.done <- forwardPumps(proxyIn, proxyOut, f.cut, nil) }()
	return f
}

// TestForwardBytes: what the client sends reaches the server unchanged and
// the other way round, for sizes around the pump's buffer, and a
// half-close of one side reaches the other while the other direction
// still works.
func TestForwardBytes(t *testing.T) {
	for _, size := range []int{1, 100, pumpBufSize - 1, pumpBufSize, pumpBufSize + 1, 1 << 20} {
		t.Run(fmt.Sprintf("%d bytes", size), func(t *testing.T) { forwardBytes(t, size) })
	}
}

func forwardBytes(t *testing.T, size int) {
	f := startForward(t)
	up, down := make([]byte, size), make([]byte, size)
	_, _ = rand.Read(up)
	_, _ = rand.Read(down)
	go func() {
		_, _ = f.client.Write(up)
		_ = f.client.CloseWrite()
	}()
	got, err := io.ReadAll(f.server) // ends at the client's half-close
	require.NoError(t, err)
	require.True(t, bytes.Equal(up, got), "client to server: %d bytes arrived of %d", len(got), size)

	go func() {
		_, _ = f.server.Write(down)
		_ = f.server.CloseWrite()
	}()
	got, err = io.ReadAll(f.client)
	require.NoError(t, err)
	require.True(t, bytes.Equal(down, got), "server to client after the client's half-close: %d bytes of %d", len(got), size)
	select {
	case wasCut := <-f.done:
		require.False(t, wasCut)
	case <-time.After(10 * time.Second):
		t.Fatal("forward did not end after both directions ended")
	}
}

// TestForwardCut: closing cut ends forward at once, both connections
// closed, even while a direction waits for a reader that never reads.
func TestForwardCut(t *testing.T) {
	f := startForward(t)
	// The server never reads: the proxy's write to it fills the socket
	// buffers and waits. Cut once the server's receive queue holds the
	// first 64 KiB: the pump is forwarding into a socket nobody reads.
	go func() { _, _ = f.client.Write(make([]byte, 8<<20)) }()
	require.Eventually(t, func() bool { return rawio.InputQueued(f.server) >= 64<<10 }, 10*time.Second, time.Millisecond)
	close(f.cut)
	select {
	case wasCut := <-f.done:
		require.True(t, wasCut)
	case <-time.After(10 * time.Second):
		t.Fatal("forward did not end when cut")
	}
	_ = f.server.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, f.server)
	require.NoError(t, err, "the server sees the proxy's close (EOF or reset), not its own deadline")
}

// TestPumpHoldsNoBufferWhenIdle: a pump gives its buffer back while it
// waits for data, and moving a message allocates nothing.
func TestPumpHoldsNoBufferWhenIdle(t *testing.T) {
	src, srcPeer := tcpPair(t)
	dst, dstPeer := tcpPair(t)
	p := newPump(dst, src)
	require.NoError(t, p.err)
	msg := []byte("Q\x00\x00\x00\x0dSELECT 1\x00")
	got := make([]byte, len(msg))
	step := func() {
		_, err := srcPeer.Write(msg)
		require.NoError(t, err)
		require.NoError(t, p.src.Read(p.readFn))
		require.NoError(t, p.err)
		p.off = 0
		require.NoError(t, p.dst.Write(p.writeFn))
		p.release()
		_, err = io.ReadFull(dstPeer, got)
		require.NoError(t, err)
	}
	step()
	require.Equal(t, msg, got)
	// Nothing to read: the callback the netpoller's wait repeats gives the
	// buffer back before the pump waits.
	var wouldWait bool
	require.NoError(t, p.src.Control(func(fd uintptr) { wouldWait = !p.read(fd) }))
	require.True(t, wouldWait, "nothing was sent")
	require.Nil(t, p.buf, "no buffer between messages")
	if raceEnabled {
		return // the race detector allocates, and sync.Pool drops buffers under it
	}
	allocs := testing.AllocsPerRun(100, step)
	require.Zero(t, allocs, "allocations per forwarded message")
}
