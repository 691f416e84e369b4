package rawio

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// WriteAwait returns only once the answer is readable (or the wait ends by
// deadline or close, which the next Read reports), and it writes even when
// the wait cannot happen.
func TestWriteAwait(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			t.Run("answer readable on return", func(t *testing.T) {
				c, peer := pair(t, network)
				go func() {
					b := make([]byte, 4)
					if _, err := io.ReadFull(peer, b); err != nil {
						return
					}
					time.Sleep(20 * time.Millisecond) // a late answer: WriteAwait must wait for it
					_, _ = peer.Write([]byte("pong"))
				}()
				n, err := c.WriteAwait([]byte("ping"))
				require.NoError(t, err)
				require.Equal(t, 4, n)
				require.Equal(t, PeekData, Peek(c), "WriteAwait returned before the answer")
				b := make([]byte, 8)
				n, err = c.Read(b)
				require.NoError(t, err)
				require.Equal(t, "pong", string(b[:n]))
			})
			t.Run("an answer at once is never missed", func(t *testing.T) {
				// An echo answers as fast as loopback goes: were readiness
				// forgotten after the write, a round would hang.
				c, peer := pair(t, network)
				go func() { _, _ = io.Copy(peer, peer) }()
				require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
				msg, b := []byte("0123456789"), make([]byte, 10)
				for i := 0; i < 2000; i++ {
					_, err := c.WriteAwait(msg)
					require.NoError(t, err)
					_, err = io.ReadFull(c, b)
					require.NoError(t, err, "round %d", i)
				}
			})
			t.Run("read deadline during the wait", func(t *testing.T) {
				c, peer := pair(t, network)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Millisecond)))
				n, err := c.WriteAwait([]byte("ping"))
				require.NoError(t, err, "the deadline is the next Read's to report")
				require.Equal(t, 4, n)
				_, err = c.Read(make([]byte, 8))
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
				b := make([]byte, 4)
				_, err = io.ReadFull(peer, b)
				require.NoError(t, err)
				require.Equal(t, "ping", string(b))
			})
			t.Run("read deadline already passed: written anyway", func(t *testing.T) {
				c, peer := pair(t, network)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(-time.Second)))
				n, err := c.WriteAwait([]byte("ping"))
				require.NoError(t, err)
				require.Equal(t, 4, n)
				b := make([]byte, 4)
				_, err = io.ReadFull(peer, b)
				require.NoError(t, err)
				require.Equal(t, "ping", string(b))
			})
			t.Run("closed during the wait", func(t *testing.T) {
				// As Kill aborts a server connection the session waits on.
				c, peer := pair(t, network)
				got := make(chan struct{})
				go func() {
					b := make([]byte, 4)
					_, _ = io.ReadFull(peer, b)
					close(got)
				}()
				done := make(chan error, 1)
				go func() {
					_, err := c.WriteAwait([]byte("ping"))
					done <- err
				}()
				<-got
				require.NoError(t, c.Close())
				require.NoError(t, <-done)
				_, err := c.Read(make([]byte, 8))
				require.ErrorIs(t, err, net.ErrClosed)
			})
			t.Run("closed before", func(t *testing.T) {
				c, _ := pair(t, network)
				require.NoError(t, c.Close())
				_, err := c.WriteAwait([]byte("ping"))
				require.ErrorIs(t, err, net.ErrClosed)
			})
			t.Run("no room: finished by Write", func(t *testing.T) {
				// Buffers filled while the peer does not read: the raw
				// write stops at EAGAIN and Write finishes the rest once
				// the peer drains; no byte is lost or doubled. (Should the
				// drain start first, the raw write finds room and waits:
				// the peer's answer ends that wait.)
				c, peer := pair(t, network)
				chunk := make([]byte, rawWriteMax)
				var filled int64
				require.NoError(t, c.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
				for {
					n, err := c.Write(chunk)
					filled += int64(n)
					if err != nil {
						require.ErrorIs(t, err, os.ErrDeadlineExceeded)
						break
					}
				}
				require.NoError(t, c.SetWriteDeadline(time.Time{}))
				done := make(chan error, 1)
				go func() {
					_, err := c.WriteAwait(chunk)
					done <- err
				}()
				got, err := io.CopyN(io.Discard, peer, filled+rawWriteMax)
				require.NoError(t, err)
				require.Equal(t, filled+rawWriteMax, got)
				_, err = peer.Write([]byte("k"))
				require.NoError(t, err)
				require.NoError(t, <-done)
			})
		})
	}
}

func TestWriteAwaitOtherConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := Wrap(a)
	go func() { _, _ = io.ReadFull(b, make([]byte, 4)) }()
	n, err := c.WriteAwait([]byte("ping"))
	require.NoError(t, err, "no socket: a plain Write")
	require.Equal(t, 4, n)
}

func TestWriteAwaitAllocs(t *testing.T) {
	c, peer := pair(t, "tcp")
	go func() { _, _ = io.Copy(peer, peer) }()
	msg, buf := []byte("0123456789"), make([]byte, 10)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.WriteAwait(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
