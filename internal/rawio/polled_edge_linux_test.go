package rawio

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestEdgeWaits(t *testing.T) {
	cases := []struct {
		name             string
		n, batch, relook int
		waits            bool
	}{
		{"one event, relook 2: waits at once", 1, 128, 2, true},
		{"two events, relook 2: looks again", 2, 128, 2, false},
		{"a full batch always looks again", 128, 128, 2, false},
		{"relook = batch: waits after any batch short of full", 127, 128, 128, true},
		{"relook = batch, full batch: looks again", 128, 128, 128, false},
		{"relook 1: never waits without a look", 1, 128, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.waits, edgeWaits(c.n, c.batch, c.relook))
		})
	}
}

// edgeLoop runs an edge-triggered PolledEpoll of batch events (looking
// again after relook or more) over pairs socket pairs: each pair's first
// end is a member (EPOLLET), its second the test's to write to (peers). read gets each byte a member's event
// reads, with peers. The returned stop ends Run and checks it ended
// cleanly.
func edgeLoop(t *testing.T, batch, relook, pairs int, read func(member int, b byte, peers []int)) (peers []int, stop func()) {
	t.Helper()
	members := map[int32]int{}
	for i := range pairs {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
		members[int32(fds[0])] = i
		peers = append(peers, fds[1])
	}
	var (
		p       *PolledEpoll
		stopped atomic.Bool
	)
	serve := func(events []unix.EpollEvent) bool {
		for _, ev := range events {
			if p.IsWake(ev.Fd) {
				// The loop wakes itself too (yieldAfter): only stop
				// ends it.
				p.DrainWake()
				if stopped.Load() {
					return false
				}
				continue
			}
			var buf [1]byte
			if n, e := ReadFD(uintptr(ev.Fd), buf[:]); e == 0 && n == 1 {
				read(members[ev.Fd], buf[0], peers)
			}
		}
		return true
	}
	p, err := NewEdgePolledEpoll(batch, relook, serve)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	for fd := range members {
		require.NoError(t, p.Ctl(unix.EPOLL_CTL_ADD, int(fd), unix.EPOLLIN|unix.EPOLLET))
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run() }()
	return peers, func() {
		stopped.Store(true)
		p.Wake()
		select {
		case err := <-ran:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not end")
		}
	}
}

// TestEdgePolledEpollServesWhatBecomesReady: on a set of edge-triggered
// members, what becomes ready while serve runs, or after a batch the loop
// waited after, is served: a ping-pong between two socket pairs where
// each byte read makes the other member ready. With one ball every batch
// has one event, and the loop goes back to the netpoller after each
// (relook 2) or looks again first (relook 1); with two balls and a batch
// of one a batch may leave an event behind. A lost
// edge stops the balls and times out.
func TestEdgePolledEpollServesWhatBecomesReady(t *testing.T) {
	cases := []struct{ batch, relook, balls int }{
		{8, 1, 1}, {8, 2, 1}, {8, 8, 1}, {8, 2, 2}, {1, 2, 1}, {1, 2, 2}, {1, 1, 2},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("batch=%d,relook=%d,balls=%d", c.batch, c.relook, c.balls), func(t *testing.T) {
			const rounds = 2000
			var (
				served atomic.Int64
				done   = make(chan struct{})
			)
			peers, stop := edgeLoop(t, c.batch, c.relook, 2, func(member int, b byte, peers []int) {
				if served.Add(1) == rounds {
					close(done)
					return
				}
				// The ball goes to the other member, which becomes
				// ready while this batch runs.
				_, _ = unix.Write(peers[1-member], []byte{b})
			})
			for _, fd := range peers[:c.balls] {
				_, err := unix.Write(fd, []byte{1})
				require.NoError(t, err)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the balls stopped after %d of %d rounds: an edge was lost", served.Load(), rounds)
			}
			stop()
		})
	}
}
