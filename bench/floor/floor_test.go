package floor

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server runs handle for every connection accepted on a new loopback
// listener, each in its own goroutine, until the test ends.
func server(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// echoServer answers every connection with what it reads and half-closes
// when the client does; accepted connections are sent on conns.
func echoServer(t *testing.T) (addr string, conns <-chan net.Conn) {
	t.Helper()
	ch := make(chan net.Conn, 64)
	addr = server(t, func(c net.Conn) {
		defer c.Close()
		ch <- c
		if _, err := io.Copy(c, c); err == nil {
			_ = c.(*net.TCPConn).CloseWrite()
		}
		_, _ = io.Copy(io.Discard, c)
	})
	return addr, ch
}

// startForwarder runs Serve for mode in front of target; the cleanup stops
// it and checks that Serve returned nil.
func startForwarder(t *testing.T, mode Mode, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, target, Config{Mode: mode, Loops: 2, PoolSize: 2}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after its context ended")
		}
	})
	return ln.Addr().String()
}

// byteModes are the shapes that forward bytes they do not understand;
// ModeTxPool speaks the protocol and has its own test (TestTxPool).
var byteModes = []Mode{ModeGoroutines, ModeEpollThread, ModeEpollNetpoller, ModeUring}

// needMode skips a test of ModeUring where the kernel refuses io_uring
// (kernel.io_uring_disabled, a seccomp filter); every other error fails.
func needMode(t *testing.T, mode Mode) {
	t.Helper()
	if mode != ModeUring {
		return
	}
	if err := uringProbe(); errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		t.Skipf("io_uring refused here: %v", err)
	} else {
		require.NoError(t, err)
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, m := range Modes {
		got, err := ParseMode(string(m))
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	_, err := ParseMode("splice")
	require.ErrorContains(t, err, `unknown forwarder mode "splice"`)
}

// TestForwardBothWays: for every shape, several connections at once each
// send 2 MiB that the echo server returns, the client not reading at first
// (so that writes meet a full socket and bytes wait in the forwarder), then
// half-close; every byte comes back in order and the client then reads EOF.
func TestForwardBothWays(t *testing.T) {
	t.Parallel()
	for _, mode := range byteModes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			needMode(t, mode)
			target, _ := echoServer(t)
			addr := startForwarder(t, mode, target)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- roundTrip(addr, 2<<20, uint64(i))
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

func roundTrip(addr string, size int, seed uint64) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	payload := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	time.Sleep(50 * time.Millisecond) // not synchronisation: the client is slow to read on purpose
	got, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if err := <-werr; err != nil {
		return err
	}
	if len(got) != len(payload) || sha256.Sum256(got) != sha256.Sum256(payload) {
		return errors.New("the bytes that came back differ from the bytes sent")
	}
	return nil
}

// TestClientResetClosesServer: a client that resets its connection makes
// the forwarder close the server side, in every shape.
func TestClientResetClosesServer(t *testing.T) {
	t.Parallel()
	for _, mode := range byteModes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			needMode(t, mode)
			target, conns := echoServer(t)
			addr := startForwarder(t, mode, target)
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			_, err = c.Write([]byte("ping"))
			require.NoError(t, err)
			buf := make([]byte, 4)
			_, err = io.ReadFull(c, buf)
			require.NoError(t, err)
			require.Equal(t, "ping", string(buf))
			srv := <-conns
			require.NoError(t, c.(*net.TCPConn).SetLinger(0))
			require.NoError(t, c.Close()) // RST
			// The echo server's conn ends (its io.Copy returns), so a read
			// on it from here sees EOF or an error, not a timeout.
			_ = srv.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = srv.Read(buf)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server side was not closed: %v", err)
		})
	}
}

// TestUnreachableTarget: a client whose server cannot be reached is closed,
// and the forwarder goes on serving.
func TestUnreachableTarget(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	addr := startForwarder(t, ModeEpollNetpoller, dead)
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(make([]byte, 1))
		require.Equal(t, 0, n)
		require.ErrorIs(t, err, io.EOF)
		require.NoError(t, c.Close())
	}
}

// TestEOFRightAfterData: a server that answers and closes at once (its
// last bytes and its FIN arrive together) is seen to the end by the
// client, many times over, in every shape. An event loop that took a short
// read for a drained socket missed the end of file there: nothing wakes
// the set again for it.
func TestEOFRightAfterData(t *testing.T) {
	t.Parallel()
	for _, mode := range byteModes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			needMode(t, mode)
			target := server(t, func(c net.Conn) {
				_, _ = c.Write([]byte("answer"))
				_ = c.Close()
			})
			addr := startForwarder(t, mode, target)
			for i := range 300 {
				c, err := net.Dial("tcp", addr)
				require.NoError(t, err)
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				got, err := io.ReadAll(c)
				_ = c.Close()
				require.NoError(t, err, "connection %d", i)
				require.Equal(t, "answer", string(got), "connection %d", i)
			}
		})
	}
}
