package rawio

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestPolledEpoll: Wake reaches serve as the eventfd's event, a member
// left readable is served again after More until it is drained, More
// brings a batch even when nothing is queued, serve's false ends Run, and
// Close closes the set.
func TestPolledEpoll(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[1])
	var (
		p       *PolledEpoll
		woken   = make(chan struct{}, 4)
		read    = make(chan byte, 16)
		extra   int64        // the batch that called More after the first Wake
		batches atomic.Int64 // counted on Run's goroutine
		after   = make(chan int64, 1)
	)
	serve := func(events []unix.EpollEvent) bool {
		n := batches.Add(1)
		if extra != 0 && n == extra+1 {
			after <- n // the batch More asked for
		}
		for _, ev := range events {
			switch {
			case p.IsWake(ev.Fd):
				p.DrainWake()
				woken <- struct{}{}
				if extra == 0 {
					extra = n
					p.More() // one more batch, though nothing is queued
				} else {
					return false
				}
			case int(ev.Fd) == fds[0]:
				// One byte a batch: the member stays ready, which a
				// level-triggered member does without a new edge for
				// the netpoller, so serve says More.
				var b [1]byte
				if n, e := ReadFD(uintptr(fds[0]), b[:]); e == 0 && n == 1 {
					read <- b[0]
					p.More()
				}
			}
		}
		return true
	}
	p, err = NewPolledEpoll(8, serve)
	require.NoError(t, err)
	require.NoError(t, p.Ctl(unix.EPOLL_CTL_ADD, fds[0], unix.EPOLLIN))
	done := make(chan struct{})
	var runErr error
	go func() { defer close(done); runErr = p.Run() }()

	_, err = unix.Write(fds[1], []byte("abc"))
	require.NoError(t, err)
	for _, want := range []byte("abc") {
		select {
		case got := <-read:
			require.Equal(t, want, got)
		case <-time.After(5 * time.Second):
			t.Fatalf("byte %q not served", want)
		}
	}
	p.Wake()
	<-woken
	select {
	case <-after:
	case <-time.After(5 * time.Second):
		t.Fatal("More brought no batch")
	}
	p.Wake()
	<-woken
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end when serve said false")
	}
	require.NoError(t, runErr, "serve's false ends Run without an error")
	require.NoError(t, p.Close())
	require.ErrorIs(t, unix.Close(p.fd), unix.EBADF, "Close closes the set")
	require.NoError(t, p.Close(), "a second Close does nothing")
	require.NoError(t, unix.Close(fds[0]))
}

// TestPolledEpollWakeAfterClose: a Wake that comes after Close (a caller
// that checked its own state before the loop ended) writes nothing, even
// to a descriptor that has taken the eventfd's number since.
func TestPolledEpollWakeAfterClose(t *testing.T) {
	p, err := NewPolledEpoll(8, func([]unix.EpollEvent) bool { return false })
	require.NoError(t, err)
	wakeFD := p.wakeFD
	p.Wake()
	require.NoError(t, p.Run()) // serves the wake and ends at once
	require.NoError(t, p.Close())
	// A socket pair's end takes the eventfd's number (dup3 onto it, as the
	// number is free now).
	_, err = unix.FcntlInt(uintptr(wakeFD), unix.F_GETFD, 0)
	require.ErrorIs(t, err, unix.EBADF, "Close left the eventfd open")
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	if fds[1] == wakeFD {
		fds[0], fds[1] = fds[1], fds[0]
	}
	defer unix.Close(fds[1])
	reused, peer := wakeFD, fds[1]
	if fds[0] != wakeFD {
		require.NoError(t, unix.Dup3(fds[0], wakeFD, unix.O_CLOEXEC))
		require.NoError(t, unix.Close(fds[0]))
	}
	defer unix.Close(reused)
	p.Wake()
	var b [8]byte
	_, e := ReadFD(uintptr(peer), b[:])
	require.Equal(t, unix.EAGAIN, e, "Wake after Close wrote to descriptor %d", reused)
}
