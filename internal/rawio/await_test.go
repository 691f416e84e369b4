package rawio

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// WriteAwaitRead writes, then returns only once the peer has answered, and
// the read that follows finds the answer; an answer that is there already,
// a deadline that passed and a close end the wait without losing a byte
// or an error.
func TestWriteAwaitRead(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			t.Run("returns once the peer answers", func(t *testing.T) {
				awaitsAnswer(t, network, (*Conn).WriteAwaitRead)
			})
			t.Run("bytes unread before the call stay", func(t *testing.T) {
				c, peer := pair(t, network)
				_, err := peer.Write([]byte("early:"))
				require.NoError(t, err)
				go func() {
					b := make([]byte, 7)
					if _, err := io.ReadFull(peer, b); err == nil {
						_, _ = peer.Write([]byte("answer"))
					}
				}()
				n, err := c.WriteAwaitRead([]byte("request"))
				require.NoError(t, err)
				require.Equal(t, 7, n)
				got, err := io.ReadAll(io.LimitReader(c, int64(len("early:answer"))))
				require.NoError(t, err)
				require.Equal(t, "early:answer", string(got))
			})
			t.Run("read deadline passed: the write alone", func(t *testing.T) {
				c, peer := pair(t, network)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(-time.Second)))
				n, err := c.WriteAwaitRead([]byte("request"))
				require.NoError(t, err)
				require.Equal(t, 7, n)
				b := make([]byte, 7)
				_, err = io.ReadFull(peer, b)
				require.NoError(t, err)
				require.Equal(t, "request", string(b))
				_, err = c.Read(b)
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			})
			t.Run("deadline during the wait is the next read's", func(t *testing.T) {
				c, peer := pair(t, network)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Millisecond)))
				_, err := c.WriteAwaitRead([]byte("request"))
				require.NoError(t, err)
				_, err = io.ReadFull(peer, make([]byte, 7))
				require.NoError(t, err)
				_, err = c.Read(make([]byte, 8))
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			})
			t.Run("closed during the wait", func(t *testing.T) {
				c, peer := pair(t, network)
				done := make(chan error, 1)
				go func() {
					_, err := c.WriteAwaitRead([]byte("request"))
					done <- err
				}()
				_, err := io.ReadFull(peer, make([]byte, 7))
				require.NoError(t, err)
				require.NoError(t, c.Close())
				require.NoError(t, <-done)
				_, err = c.Read(make([]byte, 8))
				require.ErrorIs(t, err, net.ErrClosed)
			})
			t.Run("peer gone: the write's error or EOF", func(t *testing.T) {
				c, peer := pair(t, network)
				require.NoError(t, peer.Close())
				var err error
				for i := 0; i < 100 && err == nil; i++ {
					if _, err = c.WriteAwaitRead([]byte("request")); err == nil {
						_, err = c.Read(make([]byte, 8))
					}
				}
				require.Error(t, err)
			})
		})
	}
	t.Run("not a socket: a plain write", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		c := Wrap(a)
		go func() { _, _ = io.ReadFull(b, make([]byte, 7)) }()
		n, err := c.WriteAwaitRead([]byte("request"))
		require.NoError(t, err)
		require.Equal(t, 7, n)
	})
}

// A request and its awaited answer allocate nothing.
func TestWriteAwaitReadAllocs(t *testing.T) {
	c, peer := pair(t, "tcp")
	stop := answerEach(c, peer)
	defer stop()
	msg, buf := []byte("0123456789"), make([]byte, 10)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.WriteAwaitRead(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// answerEach echoes every 10-byte request peer reads, until stop closes
// both ends and waits for it.
func answerEach(c *Conn, peer net.Conn) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 10)
		for {
			if _, err := io.ReadFull(peer, buf); err != nil {
				return
			}
			if _, err := peer.Write(buf); err != nil {
				return
			}
		}
	}()
	return func() {
		_ = c.Close()
		_ = peer.Close()
		<-done
	}
}

// BenchmarkRequestAnswer: a 10-byte request and its 10-byte answer over
// loopback TCP, the answer read after a Write (which first finds the
// socket empty) or after a WriteAwaitRead.
func BenchmarkRequestAnswer(b *testing.B) {
	for _, await := range []bool{false, true} {
		name := "write-then-read"
		if await {
			name = "write-await-read"
		}
		b.Run(name, func(b *testing.B) {
			c, peer := pair(b, "tcp")
			stop := answerEach(c, peer)
			msg, buf := []byte("0123456789"), make([]byte, 10)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var err error
				if await {
					_, err = c.WriteAwaitRead(msg)
				} else {
					_, err = c.Write(msg)
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			stop()
		})
	}
}

// WriteAwaitInput returns at once when the peer's answer came before the
// request (it gave its readiness edge before the wait could begin), and
// otherwise waits for the answer as WriteAwaitRead does.
func TestWriteAwaitInput(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			t.Run("answer queued before the request", func(t *testing.T) {
				c, peer := pair(t, network)
				_, err := peer.Write([]byte("xanswer"))
				require.NoError(t, err)
				one := make([]byte, 1)
				_, err = io.ReadFull(c, one) // the data's edge is spent
				require.NoError(t, err)
				done := make(chan error, 1)
				go func() {
					_, err := c.WriteAwaitInput([]byte("request"))
					done <- err
				}()
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(5 * time.Second):
					t.Fatal("WriteAwaitInput waited for an answer that was already there")
				}
				b := make([]byte, 6)
				_, err = io.ReadFull(c, b)
				require.NoError(t, err)
				require.Equal(t, "answer", string(b))
			})
			t.Run("waits for the answer", func(t *testing.T) {
				awaitsAnswer(t, network, (*Conn).WriteAwaitInput)
			})
		})
	}
}

// awaitsAnswer: write sends the request and returns only once the peer
// has answered, and the read that follows finds the answer.
func awaitsAnswer(t *testing.T, network string, write func(*Conn, []byte) (int, error)) {
	c, peer := pair(t, network)
	done := make(chan error, 1)
	go func() {
		_, err := write(c, []byte("request"))
		done <- err
	}()
	b := make([]byte, 7)
	_, err := io.ReadFull(peer, b)
	require.NoError(t, err)
	require.Equal(t, "request", string(b))
	select {
	case err := <-done:
		t.Fatalf("returned before the answer: %v", err)
	default:
	}
	_, err = peer.Write([]byte("answer"))
	require.NoError(t, err)
	require.NoError(t, <-done)
	n, err := c.Read(b)
	require.NoError(t, err)
	require.Equal(t, "answer", string(b[:n]))
}
