package rawio

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEdgePolledEpollServesWhatBecomesReady: on a set of edge-triggered
// members, what becomes ready while serve runs, or after a batch the loop
// waited after, is served: a ping-pong between two socket pairs where
// each event's serve makes the other member ready. With one ball every
// batch has one event, and the loop goes back to the netpoller after
// each; with two balls and a batch of one a batch may leave an event
// behind. A lost edge stops the balls and times out.
func TestEdgePolledEpollServesWhatBecomesReady(t *testing.T) {
	cases := []struct{ batch, balls int }{{8, 1}, {8, 2}, {1, 1}, {1, 2}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("batch=%d,balls=%d", c.batch, c.balls), func(t *testing.T) {
			a, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			require.NoError(t, err)
			b, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			require.NoError(t, err)
			defer func() {
				for _, fd := range []int{a[0], a[1], b[0], b[1]} {
					_ = unix.Close(fd)
				}
			}()
			const rounds = 2000
			var (
				p      *PolledEpoll
				served atomic.Int64
				stop   atomic.Bool
				done   = make(chan struct{})
			)
			serve := func(events []unix.EpollEvent) bool {
				for _, ev := range events {
					if p.IsWake(ev.Fd) {
						// The loop wakes itself too (yieldAfter):
						// only the test's stop ends it.
						p.DrainWake()
						if stop.Load() {
							return false
						}
						continue
					}
					var buf [8]byte
					n, e := ReadFD(uintptr(ev.Fd), buf[:])
					if e != 0 || n == 0 {
						continue
					}
					if served.Add(1) == rounds {
						close(done)
						continue
					}
					// The ball goes to the other pair's far end: its
					// near end becomes ready while this batch runs.
					next := b[1]
					if int(ev.Fd) == b[0] {
						next = a[1]
					}
					_, _ = unix.Write(next, buf[:1])
				}
				return true
			}
			p, err = NewEdgePolledEpoll(c.batch, serve)
			require.NoError(t, err)
			defer p.Close()
			for _, fd := range []int{a[0], b[0]} {
				require.NoError(t, p.Ctl(unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN|unix.EPOLLET))
			}
			ran := make(chan error, 1)
			go func() { ran <- p.Run() }()
			for _, fd := range []int{a[1], b[1]}[:c.balls] {
				_, err = unix.Write(fd, []byte{1})
				require.NoError(t, err)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the ball stopped after %d of %d rounds: an edge was lost", served.Load(), rounds)
			}
			stop.Store(true)
			p.Wake()
			select {
			case err := <-ran:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not end")
			}
		})
	}
}

// TestEdgePolledEpollFullBatchLooksAgain: members ready together, which
// nothing makes ready again, are all served by a loop whose batch holds
// one event: a full batch may leave events behind, and the loop looks
// again. (The Linux this was written on also wakes the netpoller for what
// a batch left behind, so there the look saves a wait rather than being
// the only way to those events.)
func TestEdgePolledEpollFullBatchLooksAgain(t *testing.T) {
	const members = 6
	var (
		p      *PolledEpoll
		served atomic.Int64
		stop   atomic.Bool
		fds    [][2]int
	)
	for range members {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		fds = append(fds, [2]int{pair[0], pair[1]})
		_, err = unix.Write(pair[1], []byte{1})
		require.NoError(t, err)
	}
	defer func() {
		for _, pair := range fds {
			_ = unix.Close(pair[0])
			_ = unix.Close(pair[1])
		}
	}()
	serve := func(events []unix.EpollEvent) bool {
		for _, ev := range events {
			if p.IsWake(ev.Fd) {
				p.DrainWake()
				if stop.Load() {
					return false
				}
				continue
			}
			var buf [8]byte
			if n, e := ReadFD(uintptr(ev.Fd), buf[:]); e == 0 && n > 0 {
				served.Add(1)
			}
		}
		return true
	}
	var err error
	p, err = NewEdgePolledEpoll(1, serve)
	require.NoError(t, err)
	defer p.Close()
	for _, pair := range fds {
		require.NoError(t, p.Ctl(unix.EPOLL_CTL_ADD, pair[0], unix.EPOLLIN|unix.EPOLLET))
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run() }()
	require.Eventually(t, func() bool { return served.Load() == members }, 5*time.Second, time.Millisecond,
		"every ready member is served")
	stop.Store(true)
	p.Wake()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end")
	}
}
