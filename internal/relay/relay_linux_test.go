package relay

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/rawio"
)

const waitFor = 10 * time.Second

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer ln.Close()
	a, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	require.NoError(t, err)
	b, err = ln.AcceptTCP() // the kernel completed the connect into the backlog
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

func newRelay(t testing.TB, loops int) *Relay {
	t.Helper()
	r, err := New(loops)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// relayed is a client and a server end with a Pair between the relay's two
// connections.
type relayed struct {
	client, server *net.TCPConn
	p              *Pair
}

func startPair(t testing.TB, r *Relay) *relayed {
	t.Helper()
	client, proxyIn := tcpPair(t)
	proxyOut, server := tcpPair(t)
	p, err := r.Add(proxyIn, proxyOut, nil)
	require.NoError(t, err)
	return &relayed{client: client, server: server, p: p}
}

func waitDone(t testing.TB, p *Pair) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(waitFor):
		t.Fatal("the pair did not end")
	}
}

func ended(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRelayBytes: what the client sends reaches the server unchanged and
// the other way round, for sizes around the loop's buffer, and a
// half-close of one side reaches the other while the other direction still
// works; the pair ends cleanly once both have sent EOF.
func TestRelayBytes(t *testing.T) {
	r := newRelay(t, 2)
	for _, size := range []int{1, 100, bufSize - 1, bufSize, bufSize + 1, 4 << 20} {
		t.Run(fmt.Sprintf("%d bytes", size), func(t *testing.T) {
			f := startPair(t, r)
			up, down := make([]byte, size), make([]byte, size)
			_, _ = rand.Read(up)
			_, _ = rand.Read(down)
			go func() {
				_, _ = f.client.Write(up)
				_ = f.client.CloseWrite()
			}()
			got, err := io.ReadAll(f.server) // ends at the client's half-close
			require.NoError(t, err)
			require.True(t, bytes.Equal(up, got), "client to server: %d bytes arrived of %d", len(got), size)
			require.False(t, ended(f.p.Done()), "one direction ended, the other goes on")

			go func() {
				_, _ = f.server.Write(down)
				_ = f.server.CloseWrite()
			}()
			got, err = io.ReadAll(f.client)
			require.NoError(t, err)
			require.True(t, bytes.Equal(down, got), "server to client: %d bytes arrived of %d", len(got), size)
			waitDone(t, f.p)
			require.NoError(t, f.p.Err())
			require.False(t, ended(f.p.ServerEnded()), "the client ended first")
		})
	}
}

// TestRelayServerDoneWhileClientSlow: the client half-closes, the server
// answers with more than the way to the client holds and closes; the
// proxy's server socket is then hung up (both directions shut) while the
// relay still holds bytes for the client and has not read the rest. No
// byte may be lost: the pair waits for the client, then reads the server
// to its end.
func TestRelayServerDoneWhileClientSlow(t *testing.T) {
	r := newRelay(t, 1)
	client, proxyIn := tcpPair(t)
	proxyOut, server := tcpPair(t)
	// The way to the client holds little; the way from the server holds
	// all of the answer, so the server's writes and close complete.
	require.NoError(t, proxyIn.SetWriteBuffer(16<<10))
	require.NoError(t, client.SetReadBuffer(16<<10))
	require.NoError(t, proxyOut.SetReadBuffer(4<<20))
	require.NoError(t, server.SetWriteBuffer(4<<20))
	p, err := r.Add(proxyIn, proxyOut, nil)
	require.NoError(t, err)
	require.NoError(t, client.CloseWrite())
	_ = server.SetReadDeadline(time.Now().Add(waitFor))
	_, err = server.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the client's half-close reaches the server")
	want := make([]byte, 1<<20)
	_, _ = rand.Read(want)
	_ = server.SetWriteDeadline(time.Now().Add(waitFor))
	_, err = server.Write(want)
	require.NoError(t, err)
	require.NoError(t, server.Close())
	require.Never(t, func() bool { return ended(p.Done()) }, 300*time.Millisecond, 10*time.Millisecond,
		"the pair ended while the client had not read the answer")
	_ = client.SetReadDeadline(time.Now().Add(waitFor))
	got, err := io.ReadAll(client)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "%d bytes arrived of %d", len(got), len(want))
	waitDone(t, p)
	require.NoError(t, p.Err())
}

// TestRelayManyPairs: pairs on a few loops do not mix bytes up; each
// client's stream of request/answer exchanges gets its own server's
// answers.
func TestRelayManyPairs(t *testing.T) {
	r := newRelay(t, 2)
	const pairs, rounds = 50, 200
	fs := make([]*relayed, pairs)
	for i := range fs {
		fs[i] = startPair(t, r)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	for i, f := range fs {
		wg.Go(func() { // the server: answer each 16-byte request with its reverse
			req := make([]byte, 16)
			for range rounds {
				if _, err := io.ReadFull(f.server, req); err != nil {
					errs <- fmt.Errorf("server %d: %w", i, err)
					return
				}
				for a, b := 0, len(req)-1; a < b; a, b = a+1, b-1 {
					req[a], req[b] = req[b], req[a]
				}
				if _, err := f.server.Write(req); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			req, ans := make([]byte, 16), make([]byte, 16)
			for n := range rounds {
				copy(req, fmt.Sprintf("%04d-%04d-abcdef", i, n))
				if _, err := f.client.Write(req); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(f.client, ans); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				for a := range req {
					if ans[a] != req[len(req)-1-a] {
						errs <- fmt.Errorf("client %d round %d: answer %q to %q", i, n, ans, req)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRelayServerEnded: a server that closes while the client is still
// there is reported at once, before the pair ends (the client gets the EOF
// and ends it); a client that closes first is no such evidence.
func TestRelayServerEnded(t *testing.T) {
	r := newRelay(t, 1)
	t.Run("server closes", func(t *testing.T) {
		f := startPair(t, r)
		require.NoError(t, f.server.Close())
		select {
		case <-f.p.ServerEnded():
		case <-time.After(waitFor):
			t.Fatal("no ServerEnded")
		}
		require.False(t, ended(f.p.Done()), "the client has not ended yet")
		_ = f.client.SetReadDeadline(time.Now().Add(waitFor))
		n, err := f.client.Read(make([]byte, 1))
		require.Equal(t, 0, n)
		require.ErrorIs(t, err, io.EOF, "the server's close reaches the client as EOF")
		require.NoError(t, f.client.Close())
		waitDone(t, f.p)
	})
	t.Run("server resets", func(t *testing.T) {
		f := startPair(t, r)
		require.NoError(t, f.server.SetLinger(0))
		require.NoError(t, f.server.Close())
		waitDone(t, f.p)
		require.True(t, ended(f.p.ServerEnded()))
		require.ErrorIs(t, f.p.Err(), syscall.ECONNRESET)
	})
	t.Run("client closes", func(t *testing.T) {
		f := startPair(t, r)
		require.NoError(t, f.client.Close())
		// The half-close reaches the server, which then closes too.
		_ = f.server.SetReadDeadline(time.Now().Add(waitFor))
		_, err := f.server.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
		require.NoError(t, f.server.Close())
		waitDone(t, f.p)
		require.False(t, ended(f.p.ServerEnded()))
		require.NoError(t, f.p.Err())
	})
	t.Run("client resets", func(t *testing.T) {
		f := startPair(t, r)
		require.NoError(t, f.client.SetLinger(0))
		require.NoError(t, f.client.Close())
		waitDone(t, f.p)
		require.False(t, ended(f.p.ServerEnded()))
		require.ErrorIs(t, f.p.Err(), syscall.ECONNRESET)
		_ = f.server.SetReadDeadline(time.Now().Add(waitFor))
		_, err := io.Copy(io.Discard, f.server)
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server sees the relay's close")
	})
}

// TestRelayCutWhileBlocked: a server that never reads fills the sockets;
// the pair holds one read's worth for it and stops reading the client (the
// client's writes then wait), and Cut ends it at once.
func TestRelayCutWhileBlocked(t *testing.T) {
	r := newRelay(t, 1)
	f := startPair(t, r)
	wrote := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(f.client, io.LimitReader(zeros{}, 64<<20))
		wrote <- n
	}()
	require.Eventually(t, func() bool { return rawio.InputQueued(f.server) >= 64<<10 }, waitFor, time.Millisecond)
	// The client's writes stop: socket buffers and one pending read hold
	// everything in flight, not the 64 MiB.
	var last int
	require.Eventually(t, func() bool {
		n := rawio.InputQueued(f.server)
		same := n == last
		last = n
		return same
	}, waitFor, 50*time.Millisecond)
	select {
	case n := <-wrote:
		t.Fatalf("the client wrote all %d bytes to a server that reads nothing", n)
	default:
	}
	f.p.Cut()
	f.p.Cut() // again: nothing more happens
	waitDone(t, f.p)
	require.NoError(t, f.p.Err())
	require.False(t, ended(f.p.ServerEnded()))
	select {
	case <-wrote: // the client's write fails once the relay closed its side
	case <-time.After(waitFor):
		t.Fatal("the client's write did not end after the cut")
	}
	_ = f.server.SetReadDeadline(time.Now().Add(waitFor))
	_, err := io.Copy(io.Discard, f.server)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server sees the relay's close (EOF or reset), not its own deadline")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRelayClientNeverReads: a large answer to a client that reads nothing
// is held by the socket buffers and one pending read per direction, not by
// the relay's memory; once the client reads, all of it arrives in order.
func TestRelayClientNeverReads(t *testing.T) {
	r := newRelay(t, 1)
	f := startPair(t, r)
	const size = 32 << 20
	want := make([]byte, size)
	_, _ = rand.Read(want)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	go func() { _, _ = f.server.Write(want) }()
	var last int
	require.Eventually(t, func() bool {
		n := rawio.InputQueued(f.client)
		same := n > 0 && n == last
		last = n
		return same
	}, waitFor, 50*time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	require.Less(t, int64(ms.HeapInuse)-int64(base), int64(1<<20), "the relay does not buffer what the client does not read")
	got := make([]byte, size)
	_ = f.client.SetReadDeadline(time.Now().Add(waitFor))
	_, err := io.ReadFull(f.client, got)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got))
}

// TestRelayCloseEndsPairs: Close ends every pair and closes their sockets,
// and Add fails afterwards, closing what it was given.
func TestRelayCloseEndsPairs(t *testing.T) {
	r, err := New(2)
	require.NoError(t, err)
	fs := []*relayed{startPair(t, r), startPair(t, r), startPair(t, r)}
	r.Close()
	for _, f := range fs {
		waitDone(t, f.p)
		require.NoError(t, f.p.Err())
		_ = f.client.SetReadDeadline(time.Now().Add(waitFor))
		_, err := f.client.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
	}
	a, b := tcpPair(t)
	_, err = r.Add(a, b, nil)
	require.ErrorIs(t, err, ErrClosed)
	_, err = a.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed, "Add closed the connection it could not take")
	r.Close() // again: nothing happens
}

// TestRelayKeepsNoDescriptors: once pairs end, the process holds no more
// descriptors than before them.
func TestRelayKeepsNoDescriptors(t *testing.T) {
	r := newRelay(t, 1)
	count := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		return len(es)
	}
	before := count()
	for range 20 {
		f := startPair(t, r)
		_, err := f.client.Write([]byte("ping"))
		require.NoError(t, err)
		require.NoError(t, f.client.Close())
		require.NoError(t, f.server.Close())
		waitDone(t, f.p)
	}
	require.Equal(t, before, count())
}

// TestRelayOthersUnharmed: a hostile mix on one loop (a reset in the middle
// of a transfer, a peer that stalls, a normal exchange) damages no other
// pair.
func TestRelayOthersUnharmed(t *testing.T) {
	r := newRelay(t, 1)
	good := startPair(t, r)
	stalled := startPair(t, r)
	reset := startPair(t, r)
	go func() { _, _ = io.Copy(stalled.client, io.LimitReader(zeros{}, 16<<20)) }() // its server never reads
	go func() { _, _ = reset.client.Write(make([]byte, 1<<20)) }()
	require.NoError(t, reset.server.SetLinger(0))
	require.NoError(t, reset.server.Close())
	waitDone(t, reset.p)
	for i := range 100 {
		msg := []byte(fmt.Sprintf("round %03d", i))
		_, err := good.client.Write(msg)
		require.NoError(t, err)
		got := make([]byte, len(msg))
		_ = good.server.SetReadDeadline(time.Now().Add(waitFor))
		_, err = io.ReadFull(good.server, got)
		require.NoError(t, err)
		require.Equal(t, msg, got)
	}
	require.False(t, ended(stalled.p.Done()))
	require.False(t, ended(good.p.Done()))
}

// BenchmarkRelayRoundTrip: one 20-byte request and a 40-byte answer through
// a pair, over loopback; allocations reported.
func BenchmarkRelayRoundTrip(b *testing.B) {
	r := newRelay(b, 1)
	f := startPair(b, r)
	req, ans := make([]byte, 20), make([]byte, 40)
	sbuf := make([]byte, 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := io.ReadFull(f.server, sbuf); err != nil {
				return
			}
			if _, err := f.server.Write(ans); err != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.client.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(f.client, ans); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = f.client.Close()
	<-done
}

// recorder is an Events that records its calls, in order.
type recorder struct {
	mu    sync.Mutex
	calls []string
	errs  []error
	ended chan struct{}
}

func newRecorder() *recorder { return &recorder{ended: make(chan struct{})} }

func (r *recorder) ServerEnded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "server ended")
}

func (r *recorder) Ended(err error) {
	r.mu.Lock()
	r.calls = append(r.calls, "ended")
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	close(r.ended) // a second call panics
}

func (r *recorder) wait(t *testing.T) ([]string, error) {
	t.Helper()
	select {
	case <-r.ended:
	case <-time.After(waitFor):
		t.Fatal("no Ended")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, r.errs[0]
}

// TestRelayEvents: an Events hears of a server that ends first and then of
// the end, once, with the pair's error; after Cut and the relay's Close it
// hears of the end with none. Ended may Cut other pairs.
func TestRelayEvents(t *testing.T) {
	add := func(t *testing.T, r *Relay, ev Events) *relayed {
		client, proxyIn := tcpPair(t)
		proxyOut, server := tcpPair(t)
		p, err := r.Add(proxyIn, proxyOut, ev)
		require.NoError(t, err)
		return &relayed{client: client, server: server, p: p}
	}
	r := newRelay(t, 1)
	t.Run("server resets", func(t *testing.T) {
		rec := newRecorder()
		f := add(t, r, rec)
		require.NoError(t, f.server.SetLinger(0))
		require.NoError(t, f.server.Close())
		calls, err := rec.wait(t)
		require.Equal(t, []string{"server ended", "ended"}, calls)
		require.ErrorIs(t, err, syscall.ECONNRESET)
		require.True(t, ended(f.p.Done()), "Done is closed before Ended")
	})
	t.Run("client closes, then the server", func(t *testing.T) {
		rec := newRecorder()
		f := add(t, r, rec)
		require.NoError(t, f.client.Close())
		_ = f.server.SetReadDeadline(time.Now().Add(waitFor))
		_, err := f.server.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
		require.NoError(t, f.server.Close())
		calls, err := rec.wait(t)
		require.Equal(t, []string{"ended"}, calls)
		require.NoError(t, err)
	})
	t.Run("cut from Ended", func(t *testing.T) {
		other := newRecorder()
		o := add(t, r, other)
		f := add(t, r, &cutter{p: o.p})
		f.p.Cut()
		calls, err := other.wait(t)
		require.Equal(t, []string{"ended"}, calls)
		require.NoError(t, err)
	})
	t.Run("relay closes", func(t *testing.T) {
		r2, err := New(1)
		require.NoError(t, err)
		rec := newRecorder()
		add(t, r2, rec)
		r2.Close()
		calls, err := rec.wait(t)
		require.Equal(t, []string{"ended"}, calls)
		require.NoError(t, err)
	})
}

// cutter cuts p when its own pair ends.
type cutter struct{ p *Pair }

func (c *cutter) ServerEnded()  {}
func (c *cutter) Ended(_ error) { c.p.Cut() }

// TestRelayLoopFailure: when a loop's epoll set fails (here: the set is
// closed under the waiting Run, which makes the netpoller's wait return an
// error), every pair of that loop ends with an Err wrapping ErrLoopFailed,
// its Events hear the same error, both clients see the connection close,
// and that loop refuses new pairs, which Add gives to the other loop; the
// other loop's pair is unharmed.
func TestRelayLoopFailure(t *testing.T) {
	r := newRelay(t, 2)
	rec := newRecorder()
	client, proxyIn := tcpPair(t)
	proxyOut, server := tcpPair(t)
	failing, err := r.Add(proxyIn, proxyOut, rec) // loop 0
	require.NoError(t, err)
	other := startPair(t, r) // loop 1

	require.NoError(t, r.loops[0].set.Close())
	waitDone(t, failing)
	require.ErrorIs(t, failing.Err(), ErrLoopFailed)
	_, evErr := rec.wait(t)
	require.ErrorIs(t, evErr, ErrLoopFailed)
	for _, c := range []*net.TCPConn{client, server} {
		_ = c.SetReadDeadline(time.Now().Add(waitFor))
		_, err := c.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
	}

	// Add passes the failed loop over (once it is known to have failed:
	// waitDone above came after run marked it).
	for range 3 {
		require.False(t, ended(startPair(t, r).p.Done()))
	}
	require.Equal(t, 4, livePairs(r.loops[1]), "every new pair went to the live loop")
	a, b := tcpPair(t)
	_, err = r.loops[0].add(a, b, nil)
	require.ErrorIs(t, err, ErrClosed)

	_, err = other.client.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_ = other.server.SetReadDeadline(time.Now().Add(waitFor))
	_, err = io.ReadFull(other.server, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf))
	require.False(t, ended(other.p.Done()))
}

// livePairs counts the pairs l serves.
func livePairs(l *loop) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[*Pair]bool{}
	for _, p := range l.pairs {
		if p != nil && !p.gone {
			seen[p] = true
		}
	}
	return len(seen)
}
