package idlepark

import (
	"net"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pair is a connected loopback pair: server is what pg_doorman would park,
// client is the peer.
type pair struct {
	server net.Conn
	client net.Conn
}

// listen returns a loopback listener of network "tcp" or "unix".
func listen(t testing.TB, network string) net.Listener {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// dialPairs connects n pairs through ln, one at a time (the kernel completes
// a loopback connect into the backlog, so dial then accept does not block).
func dialPairs(t testing.TB, ln net.Listener, n int) []pair {
	t.Helper()
	pairs := make([]pair, 0, n)
	t.Cleanup(func() {
		for _, p := range pairs {
			_ = p.client.Close()
			_ = p.server.Close()
		}
	})
	for range n {
		c, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
		require.NoError(t, err)
		s, err := ln.Accept()
		if err != nil {
			_ = c.Close()
		}
		require.NoError(t, err)
		pairs = append(pairs, pair{server: s, client: c})
	}
	return pairs
}

func newPair(t testing.TB, network string) pair {
	t.Helper()
	return dialPairs(t, listen(t, network), 1)[0]
}

func newParker(t testing.TB) *Parker {
	t.Helper()
	p, err := New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// woken is what a wake saw: the reason, then what it read from the
// connection (the way a session continues after being woken).
type woken struct {
	reason WakeReason
	data   string
	err    error
}

// wakeReader returns a wake that reads what is there (up to 64 bytes) and
// reports it on the returned channel; calls counts invocations.
func wakeReader(c net.Conn, calls *atomic.Int32) (func(WakeReason), <-chan woken) {
	ch := make(chan woken, 2)
	return func(r WakeReason) {
		calls.Add(1)
		buf := make([]byte, 64)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		ch <- woken{reason: r, data: string(buf[:n]), err: err}
	}, ch
}

func receive[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for a wake")
	}
	var zero T
	return zero
}

// waitQueued polls until the kernel holds bytes for c that nobody read.
func waitQueued(t testing.TB, c net.Conn) {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n := 0
		require.NoError(t, raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }))
		return n > 0
	}, 5*time.Second, time.Millisecond)
}
