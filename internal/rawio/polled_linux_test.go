package rawio

import (
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestPolledEpoll: Wake reaches serve as the eventfd's event, a member
// left readable is served again until it is drained, serve's false ends
// Run, and Close closes the set.
func TestPolledEpoll(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[1])
	var (
		p     *PolledEpoll
		woken = make(chan struct{}, 4)
		read  = make(chan byte, 16)
	)
	serve := func(events []unix.EpollEvent) bool {
		for _, ev := range events {
			switch {
			case p.IsWake(ev.Fd):
				p.DrainWake()
				woken <- struct{}{}
				return false
			case int(ev.Fd) == fds[0]:
				// One byte a batch: the member stays ready, which a
				// level-triggered member does without a new edge for
				// the netpoller.
				var b [1]byte
				if n, e := ReadFD(uintptr(fds[0]), b[:]); e == 0 && n == 1 {
					read <- b[0]
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

// TestPolledEpollNoParkWhileBusy: what becomes ready while serve runs is
// served in the same wake-up, without a park and a netpoller round trip;
// Run waits again once a look finds nothing.
func TestPolledEpollNoParkWhileBusy(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	const rounds = 50
	var (
		p      *PolledEpoll
		served int
		polls  atomic.Int64 // netpoller wake-ups, and the first look
		parked = make(chan int64, 1)
		done   = make(chan struct{})
	)
	serve := func(events []unix.EpollEvent) bool {
		for _, ev := range events {
			if p.IsWake(ev.Fd) {
				p.DrainWake()
				return false
			}
			var b [1]byte
			if n, e := ReadFD(uintptr(fds[0]), b[:]); e != 0 || n != 1 {
				continue
			}
			served++
			if served < rounds {
				// The next one is ready before serve returns, as a
				// busy peer's answer would be.
				_, _ = unix.Write(fds[1], b[:])
			} else {
				parked <- polls.Load()
			}
		}
		return true
	}
	p, err = NewPolledEpoll(8, serve)
	require.NoError(t, err)
	defer p.Close()
	p.yieldAfter = time.Hour // this serve ends Run on a wake
	inner := p.pollFn
	p.pollFn = func(fd uintptr) bool { polls.Add(1); return inner(fd) }
	require.NoError(t, p.Ctl(unix.EPOLL_CTL_ADD, fds[0], unix.EPOLLIN))
	go func() { defer close(done); _ = p.Run() }()
	// Run's first look may come before the first byte: one wake-up more.
	_, err = unix.Write(fds[1], []byte{1})
	require.NoError(t, err)
	select {
	case n := <-parked:
		require.LessOrEqual(t, n, int64(2), "%d rounds took %d wake-ups", rounds, n)
	case <-time.After(5 * time.Second):
		t.Fatal("the rounds were not served")
	}
	// Nothing is ready now: Run waits, and a Wake brings it back.
	p.Wake()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not come back for the Wake")
	}
	require.Equal(t, rounds, served)
}

// TestPolledEpollYields: a loop whose set is never empty still lets the
// goroutines queued behind it run, every yieldEvery batches, even on one P.
func TestPolledEpollYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	_, err = unix.Write(fds[1], []byte{1}) // never read: always ready
	require.NoError(t, err)
	var (
		p       *PolledEpoll
		batches atomic.Int64
		started = make(chan struct{})
		stop    atomic.Bool
	)
	serve := func([]unix.EpollEvent) bool {
		if batches.Add(1) == 1 {
			close(started) // the test's goroutine is runnable from here on
		}
		return !stop.Load()
	}
	p, err = NewPolledEpoll(8, serve)
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Ctl(unix.EPOLL_CTL_ADD, fds[0], unix.EPOLLIN))
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run() }()
	<-started
	n := batches.Load()
	stop.Store(true)
	<-done
	// The first yield lets it run, unless the scheduler's turn at the
	// global queue (one schedule in 61) picks the loop again; allow for
	// three such turns. Without the yield it waits for the 10 ms
	// preemption: thousands of batches.
	require.LessOrEqual(t, n, int64(4*yieldEvery), "the goroutine behind the loop ran only after %d batches", n)
}

// TestPolledEpollLetsNetpollerRun: on one P, a loop whose set is never
// empty still lets a goroutine that waits in Go's netpoller run once its
// socket is ready: after yieldAfter poll waits in the netpoller itself,
// and the goroutine runs then. runtime.Gosched alone leaves it to sysmon's
// poll of the network, which comes after up to 10 ms.
func TestPolledEpollLetsNetpollerRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	pair := func() [2]int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		return [2]int{fds[0], fds[1]}
	}
	busy, waited := pair(), pair()
	defer unix.Close(busy[0])
	defer unix.Close(busy[1])
	defer unix.Close(waited[1])
	_, err := unix.Write(busy[1], []byte{1}) // never read: always ready
	require.NoError(t, err)
	f := os.NewFile(uintptr(waited[0]), "waited")
	conn, err := net.FileConn(f) // a dup, in the netpoller
	require.NoError(t, f.Close())
	require.NoError(t, err)
	defer conn.Close()

	var (
		p       *PolledEpoll
		started = make(chan struct{})
		once    sync.Once
		stop    atomic.Bool
	)
	serve := func(events []unix.EpollEvent) bool {
		for _, ev := range events {
			if p.IsWake(ev.Fd) {
				p.DrainWake()
			}
		}
		once.Do(func() { close(started) })
		return !stop.Load()
	}
	p, err = NewPolledEpoll(8, serve)
	require.NoError(t, err)
	defer p.Close()
	p.yieldAfter = 100 * time.Microsecond
	require.NoError(t, p.Ctl(unix.EPOLL_CTL_ADD, busy[0], unix.EPOLLIN))

	woke := make(chan uint64)
	go readAndReport(conn, p, woke)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run() }()
	<-started // the loop is busy from here on; its Gosched lets this run

	// Sysmon may poll the network between a write and the loop's next
	// wait in the netpoller now and then; without that wait it is the
	// only poll, and every round is its.
	const rounds = 5
	atYield := 0
	for range rounds {
		require.Eventually(t, func() bool { return inIOWait("rawio.readAndReport") },
			5*time.Second, time.Millisecond, "the reader never waited in the netpoller")
		before := p.yields.Load()
		_, err = unix.Write(waited[1], []byte{1})
		require.NoError(t, err)
		select {
		case at := <-woke:
			if at > before && at <= before+2 { // at the first wait after the write, or the next
				atYield++
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the netpoller's goroutine never ran")
		}
	}
	stop.Store(true)
	p.Wake()
	<-done
	require.Greater(t, atYield, rounds/2, "the reader ran at the loop's wait in the netpoller in %d of %d rounds", atYield, rounds)
}

// readAndReport reads conn a byte at a time, reporting p's yields after
// each byte.
func readAndReport(conn net.Conn, p *PolledEpoll, woke chan<- uint64) {
	var b [1]byte
	for {
		if _, err := conn.Read(b[:]); err != nil {
			return
		}
		woke <- p.yields.Load()
	}
}

// inIOWait reports whether a goroutine whose stack names fn waits in the
// netpoller.
func inIOWait(fn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, fn) {
			return true
		}
	}
	return false
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
