package txloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

type recorder chan [2]uint32

func (r recorder) Event(fd int, events uint32) { r <- [2]uint32{uint32(fd), events} }

func pair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func next(t *testing.T, r recorder) [2]uint32 {
	t.Helper()
	select {
	case e := <-r:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
		return [2]uint32{}
	}
}

func TestLoop(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	a, b := pair(t)
	r := make(recorder, 8)

	_, err = unix.Write(b, []byte("x")) // readable before Add: reported at once
	require.NoError(t, err)
	require.NoError(t, l.Add(a, r))
	require.Equal(t, 1, l.Len())
	e := next(t, r)
	require.Equal(t, uint32(a), e[0])
	require.NotZero(t, e[1]&unix.EPOLLIN)

	// Edge-triggered: nothing more until new bytes come.
	ran := make(chan struct{})
	require.True(t, l.Kick(func() { close(ran) }))
	<-ran
	select {
	case e := <-r:
		t.Fatalf("event without a new edge: %v", e)
	default:
	}
	_, err = unix.Write(b, []byte("y"))
	require.NoError(t, err)
	next(t, r)

	// After Del, no events; a new Add of the same number gets its own.
	l.Del(a)
	require.Equal(t, 0, l.Len())
	_, err = unix.Write(b, []byte("z"))
	require.NoError(t, err)
	ran = make(chan struct{})
	require.True(t, l.Kick(func() { close(ran) }))
	<-ran
	require.Empty(t, r)
	require.Error(t, l.Add(-1, r))

	// Close: a member still in the set hears Closed for its descriptor.
	c, _ := pair(t)
	require.NoError(t, l.Add(c, r))
	l.Close()
	e = next(t, r)
	require.Equal(t, [2]uint32{uint32(c), Closed}, e)
	require.Equal(t, 0, l.Len())
	require.ErrorIs(t, l.Add(a, r), ErrClosed)
	require.False(t, l.Kick(func() {}))
	l.Del(c) // after close: nothing, no panic
	l.Close()
}

func TestGroupFor(t *testing.T) {
	g, err := NewGroup(3)
	require.NoError(t, err)
	defer g.Close()
	require.Len(t, g, 3)
	require.Same(t, g[1], g.For(4))
	require.Nil(t, Group(nil).For(1))
}
