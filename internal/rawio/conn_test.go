package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair returns a connected pair over network ("tcp" or "unix"): the
// accepted side wrapped, and the dialling side as is.
func pair(t testing.TB, network string) (*Conn, net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	defer ln.Close()
	peer, err := net.Dial(network, ln.Addr().String())
	require.NoError(t, err)
	nc, err := ln.Accept()
	require.NoError(t, err)
	c := Wrap(nc)
	require.NotNil(t, c.rc, "a plain socket takes the raw path")
	t.Cleanup(func() { _ = c.Close(); _ = peer.Close() })
	return c, peer
}

func TestConn(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			t.Run("read and write", func(t *testing.T) {
				c, peer := pair(t, network)
				go func() { _, _ = peer.Write([]byte("hello")) }()
				b := make([]byte, 16)
				n, err := c.Read(b)
				require.NoError(t, err)
				require.Equal(t, "hello", string(b[:n]))
				n, err = c.Write([]byte("world"))
				require.NoError(t, err)
				require.Equal(t, 5, n)
				_, err = io.ReadFull(peer, b[:5])
				require.NoError(t, err)
				require.Equal(t, "world", string(b[:5]))
			})
			t.Run("EOF", func(t *testing.T) {
				c, peer := pair(t, network)
				require.NoError(t, peer.Close())
				_, err := c.Read(make([]byte, 8))
				require.ErrorIs(t, err, io.EOF)
			})
			t.Run("read deadline", func(t *testing.T) {
				c, _ := pair(t, network)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
				_, err := c.Read(make([]byte, 8))
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
				var ne net.Error
				require.ErrorAs(t, err, &ne)
				require.True(t, ne.Timeout())
			})
			t.Run("closed", func(t *testing.T) {
				c, _ := pair(t, network)
				require.NoError(t, c.Close())
				_, err := c.Read(make([]byte, 8))
				require.ErrorIs(t, err, net.ErrClosed)
				_, err = c.Write([]byte("x"))
				require.ErrorIs(t, err, net.ErrClosed)
			})
			t.Run("write waits for room", func(t *testing.T) {
				// More than the socket buffers hold, in raw-sized
				// writes: each one waits for the reader in the
				// netpoller instead of failing with EAGAIN.
				c, peer := pair(t, network)
				chunk := make([]byte, rawWriteMax)
				for i := range chunk {
					chunk[i] = byte(i)
				}
				const chunks = 200 // 12.5 MiB
				done := make(chan error, 1)
				go func() {
					for i := 0; i < chunks; i++ {
						if _, err := c.Write(chunk); err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
				got, err := io.Copy(io.Discard, io.LimitReader(peer, chunks*rawWriteMax))
				require.NoError(t, err)
				require.Equal(t, int64(chunks*rawWriteMax), got)
				require.NoError(t, <-done)
			})
			t.Run("write deadline with a peer that never reads", func(t *testing.T) {
				c, _ := pair(t, network)
				require.NoError(t, c.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
				chunk := make([]byte, rawWriteMax)
				var err error
				for i := 0; i < 10000 && err == nil; i++ {
					_, err = c.Write(chunk)
				}
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			})
			t.Run("reset", func(t *testing.T) {
				c, peer := pair(t, network)
				if tc, ok := peer.(*net.TCPConn); ok {
					require.NoError(t, tc.SetLinger(0))
				}
				require.NoError(t, peer.Close())
				var err error
				for i := 0; i < 100 && err == nil; i++ {
					_, err = c.Write([]byte("x"))
					if err == nil {
						_, err = c.Read(make([]byte, 1))
					}
				}
				require.Error(t, err)
				require.False(t, errors.Is(err, os.ErrDeadlineExceeded))
			})
		})
	}
}

func TestWrapOtherConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := Wrap(a)
	require.Nil(t, c.rc, "net.Pipe has no socket: plain Read and Write")
	go func() { _, _ = b.Write([]byte("p")) }()
	buf := make([]byte, 1)
	_, err := c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "p", string(buf))
}

// The hot path allocates nothing per call.
func TestConnAllocs(t *testing.T) {
	c, peer := pair(t, "tcp")
	msg := []byte("0123456789")
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// BenchmarkRoundTrip: a 10-byte message each way through a Conn, raw and
// plain, over loopback TCP.
func BenchmarkRoundTrip(b *testing.B) {
	for _, raw := range []bool{true, false} {
		name := "plain"
		if raw {
			name = "raw"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			defer ln.Close()
			peer, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(b, err)
			defer peer.Close()
			nc, err := ln.Accept()
			require.NoError(b, err)
			var c net.Conn = nc
			if raw {
				c = Wrap(nc)
			}
			defer c.Close()
			done := make(chan struct{})
			go func() { // echo
				defer close(done)
				buf := make([]byte, 10)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
			msg, buf := []byte("0123456789"), make([]byte, 10)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := peer.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(peer, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = peer.Close()
			<-done
		})
	}
}

// Concurrent writers do not mix their scratch state: every byte of each
// arrives (a Close's Terminate and a session's flush can overlap).
func TestConcurrentWriters(t *testing.T) {
	c, peer := pair(t, "tcp")
	const writers, each, size = 8, 200, 100
	done := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			msg := make([]byte, size)
			for i := range msg {
				msg[i] = byte(w)
			}
			for i := 0; i < each; i++ {
				if _, err := c.Write(msg); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}(w)
	}
	counts := make([]int, writers)
	buf := make([]byte, size)
	for i := 0; i < writers*each; i++ {
		_, err := io.ReadFull(peer, buf)
		require.NoError(t, err)
		for _, b := range buf[1:] {
			require.Equal(t, buf[0], b, "a write is never split by another")
		}
		counts[buf[0]]++
	}
	for w := 0; w < writers; w++ {
		require.NoError(t, <-done)
		require.Equal(t, each, counts[w])
	}
}
