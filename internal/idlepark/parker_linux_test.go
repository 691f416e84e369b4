package idlepark

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestWake(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		networks []string
		before   func(t *testing.T, c net.Conn) // before Park
		after    func(t *testing.T, c net.Conn) // while parked
		reason   WakeReason
		data     string
		readErr  error
	}{
		{
			name: "data", networks: []string{"tcp", "unix"},
			after:  func(t *testing.T, c net.Conn) { _, err := c.Write([]byte("Q\x00")); require.NoError(t, err) },
			reason: WakeReadable, data: "Q\x00",
		},
		{
			name: "data before park", networks: []string{"tcp", "unix"},
			before: func(t *testing.T, c net.Conn) { _, err := c.Write([]byte("early")); require.NoError(t, err) },
			reason: WakeReadable, data: "early",
		},
		{
			name: "peer close", networks: []string{"tcp", "unix"},
			after:  func(t *testing.T, c net.Conn) { require.NoError(t, c.Close()) },
			reason: WakeHangup, readErr: io.EOF,
		},
		{
			name: "terminate then close", networks: []string{"tcp", "unix"},
			before: func(t *testing.T, c net.Conn) {
				_, err := c.Write([]byte("X\x00\x00\x00\x04"))
				require.NoError(t, err)
				require.NoError(t, c.Close())
			},
			reason: WakeHangup, data: "X\x00\x00\x00\x04",
		},
		{
			name: "peer reset", networks: []string{"tcp"},
			after: func(t *testing.T, c net.Conn) {
				require.NoError(t, c.(*net.TCPConn).SetLinger(0))
				require.NoError(t, c.Close())
			},
			reason: WakeError, readErr: syscall.ECONNRESET,
		},
	}
	for _, tt := range tests {
		for _, network := range tt.networks {
			t.Run(tt.name+"/"+network, func(t *testing.T) {
				t.Parallel()
				p := newParker(t)
				pr := newPair(t, network)
				if tt.before != nil {
					tt.before(t, pr.client)
					waitQueued(t, pr.server)
				}
				var calls atomic.Int32
				wake, ch := wakeReader(pr.server, &calls)
				require.NoError(t, p.Park(pr.server.(syscall.Conn), wake))
				if tt.after != nil {
					tt.after(t, pr.client)
				}
				w := receive(t, ch)
				require.Equal(t, tt.reason, w.reason)
				require.Equal(t, tt.data, w.data)
				if tt.readErr != nil {
					require.ErrorIs(t, w.err, tt.readErr)
				} else {
					require.NoError(t, w.err)
				}
				require.Equal(t, 0, p.Len())
				require.NoError(t, p.Close())
				require.Equal(t, int32(1), calls.Load(), "wake must run exactly once")
			})
		}
	}
}

// TestManyParked parks 1,000 connections, writes to every other one: exactly
// those wake as readable, and Close wakes the rest with WakeClosed.
func TestManyParked(t *testing.T) {
	t.Parallel()
	const n = 1000
	p := newParker(t)
	pairs := dialPairs(t, listen(t, "tcp"), n)
	reasons := make([]atomic.Int32, n) // WakeReason+100*calls, per pair
	wakes := make(chan int, n)
	for i, pr := range pairs {
		require.NoError(t, p.Park(pr.server.(syscall.Conn), func(r WakeReason) {
			reasons[i].Add(int32(r) + 100)
			wakes <- i
		}))
	}
	require.Equal(t, n, p.Len())

	for i := 0; i < n; i += 2 {
		_, err := pairs[i].client.Write([]byte("x"))
		require.NoError(t, err)
	}
	for range n / 2 {
		i := receive(t, wakes)
		require.Zero(t, i%2, "pair %d was not written to", i)
	}
	require.Equal(t, n/2, p.Len())

	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close twice")
	for range n / 2 {
		i := receive(t, wakes)
		require.Equal(t, 1, i%2, "pair %d woken twice", i)
	}
	require.Zero(t, p.Len())
	for i := range reasons {
		want := WakeReadable
		if i%2 == 1 {
			want = WakeClosed
		}
		require.Equal(t, int32(want)+100, reasons[i].Load(), "pair %d", i)
	}
	err := p.Park(pairs[0].server.(syscall.Conn), func(WakeReason) {})
	require.ErrorIs(t, err, ErrClosed)
}

func TestParkTwice(t *testing.T) {
	t.Parallel()
	p := newParker(t)
	pr := newPair(t, "tcp")
	var calls atomic.Int32
	wake, ch := wakeReader(pr.server, &calls)
	sc := pr.server.(syscall.Conn)
	require.NoError(t, p.Park(sc, wake))
	require.ErrorIs(t, p.Park(sc, func(WakeReason) { t.Error("second wake ran") }), ErrParked)
	require.Equal(t, 1, p.Len())
	_, err := pr.client.Write([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "a", receive(t, ch).data)
	require.NoError(t, p.Close())
	require.Equal(t, int32(1), calls.Load())
}

func TestUnpark(t *testing.T) {
	t.Parallel()
	p := newParker(t)
	pr := newPair(t, "unix")
	sc := pr.server.(syscall.Conn)
	require.False(t, p.Unpark(sc), "never parked")

	reasons := make(chan WakeReason, 2)
	require.NoError(t, p.Park(sc, func(r WakeReason) { reasons <- r }))
	require.True(t, p.Unpark(sc))
	require.Equal(t, WakeUnparked, receive(t, reasons))
	require.False(t, p.Unpark(sc), "unparked already")
	require.Zero(t, p.Len())

	// Bytes sent after Unpark do not wake the old registration; parking
	// again sees them at once.
	_, err := pr.client.Write([]byte("b"))
	require.NoError(t, err)
	waitQueued(t, pr.server)
	require.NoError(t, p.Park(sc, func(r WakeReason) { reasons <- r }))
	require.Equal(t, WakeReadable, receive(t, reasons))
	require.NoError(t, p.Close())
	require.Empty(t, reasons)
}

// TestStaleEvent: an event of an earlier registration under the same fd
// number (unparked, closed, number reused) must not wake the new connection.
func TestStaleEvent(t *testing.T) { // not parallel: it needs the fd number back
	p := newParker(t)
	ln := listen(t, "tcp")
	a := dialPairs(t, ln, 1)[0]
	fdA := fdOf(t, a.server)
	reasons := make(chan string, 4)
	require.NoError(t, p.Park(a.server.(syscall.Conn), func(r WakeReason) { reasons <- "a " + r.String() }))
	p.mu.Lock()
	stale := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fdA), Pad: int32(p.slots[fdA].gen)}
	p.mu.Unlock()
	require.True(t, p.Unpark(a.server.(syscall.Conn)))
	require.Equal(t, "a unparked", receive(t, reasons))
	require.NoError(t, a.server.Close())

	// The kernel hands out the lowest free number: the dialing side of the
	// next pair gets fdA.
	b := dialPairs(t, ln, 1)[0]
	require.Equal(t, fdA, fdOf(t, b.client), "fd number not reused")
	require.NoError(t, p.Park(b.client.(syscall.Conn), func(r WakeReason) { reasons <- "b " + r.String() }))

	batch, open := p.dispatch([]unix.EpollEvent{stale}, nil)
	require.Empty(t, batch, "stale event dispatched")
	require.True(t, open)
	require.Equal(t, 1, p.Len())
	require.NoError(t, p.Close())
	require.Equal(t, "b closed", receive(t, reasons))
	require.Empty(t, reasons)
}

// TestConcurrent races Park, wake, Unpark and Close (run with -race): every
// successful Park is matched by exactly one wake.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	const n, rounds = 50, 20
	p := newParker(t)
	pairs := dialPairs(t, listen(t, "tcp"), n)
	var parks, wakes atomic.Int64
	var wg sync.WaitGroup // one Add per successful Park, Done per wake
	for _, pr := range pairs {
		sc := pr.server.(syscall.Conn)
		var mu sync.Mutex // the session's own state: who holds the conn
		var wake func(WakeReason)
		wake = func(r WakeReason) {
			wakes.Add(1)
			defer wg.Done()
			if r == WakeClosed {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			buf := make([]byte, 16)
			if r == WakeReadable {
				_, _ = pr.server.Read(buf)
			}
			if parks.Load() < n*rounds {
				wg.Add(1)
				if err := p.Park(sc, wake); err != nil {
					wg.Done()
					if !errors.Is(err, ErrClosed) {
						t.Errorf("repark: %v", err)
					}
					return
				}
				parks.Add(1)
			}
		}
		wg.Add(1)
		require.NoError(t, p.Park(sc, wake))
		parks.Add(1)
	}
	var writers sync.WaitGroup
	for i, pr := range pairs {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range rounds {
				_, _ = pr.client.Write([]byte("w"))
				if i%5 == 0 {
					p.Unpark(pr.server.(syscall.Conn))
				}
			}
		}()
	}
	writers.Wait()
	require.NoError(t, p.Close())
	wg.Wait()
	require.Equal(t, parks.Load(), wakes.Load())
	require.Zero(t, p.Len())
}

func TestParkErrors(t *testing.T) {
	t.Parallel()
	p := newParker(t)
	pr := newPair(t, "tcp")
	require.NoError(t, pr.server.Close())
	err := p.Park(pr.server.(syscall.Conn), func(WakeReason) { t.Error("wake ran") })
	require.Error(t, err, "closed conn")
	require.False(t, p.Unpark(pr.server.(syscall.Conn)))
	require.Panics(t, func() { _ = p.Park(pr.client.(syscall.Conn), nil) })
	require.Zero(t, p.Len())
	require.False(t, errors.Is(err, ErrParked), fmt.Sprint(err))
}

func fdOf(t testing.TB, c net.Conn) int {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	fd := -1
	require.NoError(t, raw.Control(func(u uintptr) { fd = int(u) }))
	return fd
}
