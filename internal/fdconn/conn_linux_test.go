package fdconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a Poller, a loopback listener accepted through it, and one
// accepted Conn with the client's end.
type rig struct {
	p      *Poller
	ln     *net.TCPListener
	l      *Listener
	c      *Conn
	client *net.TCPConn
}

func newRig(t *testing.T) *rig {
	t.Helper()
	p, err := NewPoller()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := p.Listen(ln)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{p: p, ln: ln, l: l}
	t.Cleanup(func() {
		if r.client != nil {
			_ = r.client.Close()
		}
		if r.c != nil {
			_ = r.c.Close()
		}
		_ = l.Close()
		_ = ln.Close()
		if err := p.Close(); err != nil {
			t.Errorf("poller close: %v", err)
		}
	})
	r.client, r.c = r.dial(t)
	return r
}

func (r *rig) dial(t *testing.T) (*net.TCPConn, *Conn) {
	t.Helper()
	nc, err := net.DialTCP("tcp", nil, r.ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return nc, c
}

// result of a call made in a goroutine.
type result struct {
	n   int
	err error
}

func readAsync(c net.Conn, b []byte) chan result {
	ch := make(chan result, 1)
	go func() {
		n, err := c.Read(b)
		ch <- result{n, err}
	}()
	return ch
}

// held returns once a call holds mu, the lock of its direction (or of
// Accept): the call has begun, and with nothing for it to find it waits.
func held(t *testing.T, mu *sync.Mutex) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for mu.TryLock() {
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the call did not begin")
		}
		runtime.Gosched()
	}
}

func await(t *testing.T, ch chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("call did not return")
		return result{}
	}
}

func TestConnAddresses(t *testing.T) {
	r := newRig(t)
	if got, want := r.c.RemoteAddr().String(), r.client.LocalAddr().String(); got != want {
		t.Errorf("RemoteAddr %s, want %s", got, want)
	}
	if got, want := r.c.LocalAddr().String(), r.client.RemoteAddr().String(); got != want {
		t.Errorf("LocalAddr %s, want %s", got, want)
	}
}

func TestConnReadWrite(t *testing.T) {
	r := newRig(t)
	// A read that waits for the client, then one that finds bytes queued.
	ch := readAsync(r.c, make([]byte, 16))
	held(t, &r.c.rd.op)
	if _, err := r.client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if res := await(t, ch); res.err != nil || res.n != 5 {
		t.Fatalf("read %d, %v", res.n, res.err)
	}
	// A write larger than both socket buffers, however far loopback's
	// autotuning grows them, to a client that reads nothing until it has
	// found the socket full (the set reports EPOLLOUT from then on).
	big := bytes.Repeat([]byte("x"), 32<<20)
	wch := make(chan result, 1)
	go func() {
		n, err := r.c.Write(big)
		wch <- result{n, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !r.c.writeEdges.Load() && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	got, err := io.ReadAll(io.LimitReader(r.client, int64(len(big))))
	if err != nil || len(got) != len(big) {
		t.Fatalf("client read %d, %v", len(got), err)
	}
	if res := await(t, wch); res.err != nil || res.n != len(big) {
		t.Fatalf("write %d, %v", res.n, res.err)
	}
	if !r.c.writeEdges.Load() {
		t.Error("a write that waited did not turn EPOLLOUT on")
	}
	// The client's FIN is io.EOF.
	_ = r.client.CloseWrite()
	if res := await(t, readAsync(r.c, make([]byte, 1))); !errors.Is(res.err, io.EOF) {
		t.Fatalf("after FIN: %d, %v", res.n, res.err)
	}
}

func TestConnReset(t *testing.T) {
	r := newRig(t)
	ch := readAsync(r.c, make([]byte, 1))
	_ = r.client.SetLinger(0)
	_ = r.client.Close()
	r.client = nil
	res := await(t, ch)
	if !errors.Is(res.err, syscall.ECONNRESET) {
		t.Fatalf("read after a reset: %d, %v", res.n, res.err)
	}
}

func TestConnDeadlines(t *testing.T) {
	tests := []struct {
		name string
		// arm sets the deadline; moved moves it while the read waits.
		arm   func(c *Conn) error
		moved func(c *Conn) error
	}{
		{"expires", func(c *Conn) error { return c.SetReadDeadline(time.Now().Add(30 * time.Millisecond)) }, nil},
		{"both", func(c *Conn) error { return c.SetDeadline(time.Now().Add(30 * time.Millisecond)) }, nil},
		{"moved to the past", func(*Conn) error { return nil }, func(c *Conn) error { return c.SetReadDeadline(time.Now().Add(-time.Second)) }},
		{"moved closer", func(c *Conn) error { return c.SetReadDeadline(time.Now().Add(time.Hour)) },
			func(c *Conn) error { return c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			if err := tt.arm(r.c); err != nil {
				t.Fatal(err)
			}
			ch := readAsync(r.c, make([]byte, 1))
			if tt.moved != nil {
				// The read waits (nothing comes) until the deadline moves.
				select {
				case res := <-ch:
					t.Fatalf("read returned before the deadline moved: %v", res.err)
				case <-time.After(50 * time.Millisecond):
				}
				if err := tt.moved(r.c); err != nil {
					t.Fatal(err)
				}
			}
			res := await(t, ch)
			var ne net.Error
			if !errors.Is(res.err, os.ErrDeadlineExceeded) || !errors.As(res.err, &ne) || !ne.Timeout() {
				t.Fatalf("read: %v, want a timeout", res.err)
			}
			// The deadline cleared, the Conn reads again.
			_ = r.c.SetReadDeadline(time.Time{})
			ch = readAsync(r.c, make([]byte, 1))
			_, _ = r.client.Write([]byte("y"))
			if res := await(t, ch); res.err != nil || res.n != 1 {
				t.Fatalf("read after the timeout: %d, %v", res.n, res.err)
			}
		})
	}
}

func TestConnCloseEndsWaits(t *testing.T) {
	r := newRig(t)
	ch := readAsync(r.c, make([]byte, 1))
	// A write that waits on a full socket too (the client never reads).
	wch := make(chan result, 1)
	go func() {
		n, err := r.c.Write(bytes.Repeat([]byte("x"), 32<<20))
		wch <- result{n, err}
	}()
	held(t, &r.c.rd.op)
	held(t, &r.c.wr.op)
	if err := r.c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []chan result{ch, wch} {
		if res := await(t, c); !errors.Is(res.err, net.ErrClosed) {
			t.Errorf("waiting call after Close: %v", res.err)
		}
	}
	if err := r.c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if n := r.p.Len(); n != 0 {
		t.Errorf("poller holds %d conns after Close", n)
	}
	// The peer sees the end.
	_ = r.client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, r.client); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("client: %v", err)
	}
}

// WriteAwaitInput makes a RawConn write inside a RawConn read: a Close
// while it waits must neither deadlock nor leave it waiting.
func TestConnNestedCallsAndClose(t *testing.T) {
	r := newRig(t)
	w := rawio.Wrap(r.c)
	if !w.Socket() {
		t.Fatal("rawio.Wrap did not take the Conn as a socket")
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.WriteAwaitInput([]byte("challenge"))
		done <- err
	}()
	buf := make([]byte, 9)
	if _, err := io.ReadFull(r.client, buf); err != nil || string(buf) != "challenge" {
		t.Fatalf("client read %q, %v", buf, err)
	}
	select {
	case err := <-done:
		t.Fatalf("WriteAwaitInput returned before an answer: %v", err)
	case <-time.After(30 * time.Millisecond):
	}
	closed := make(chan error, 1)
	go func() { closed <- r.c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung behind a waiting WriteAwaitInput")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WriteAwaitInput still waits after Close")
	}
}

func TestConnDetach(t *testing.T) {
	r := newRig(t)
	fd, err := r.c.Detach()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if n := r.p.Len(); n != 0 {
		t.Errorf("poller holds %d conns after Detach", n)
	}
	if _, err := r.c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Detach: %v", err)
	}
	if err := r.c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Close after Detach: %v", err)
	}
	// The descriptor is the socket, still open.
	if _, err := unix.Write(fd, []byte("after")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(r.client, buf); err != nil || string(buf) != "after" {
		t.Fatalf("client read %q, %v", buf, err)
	}
}

func TestConnPromote(t *testing.T) {
	r := newRig(t)
	_ = r.c.SetWriteDeadline(time.Now().Add(time.Hour))
	// A read that waits in the Poller when Promote comes goes on in the
	// netpoller.
	ch := readAsync(r.c, make([]byte, 1))
	held(t, &r.c.rd.op)
	if err := r.c.Promote(); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Promote(); err != nil {
		t.Fatalf("second Promote: %v", err)
	}
	if n := r.p.Len(); n != 0 {
		t.Errorf("poller holds %d conns after Promote", n)
	}
	if _, err := r.client.Write([]byte("z")); err != nil {
		t.Fatal(err)
	}
	if res := await(t, ch); res.err != nil || res.n != 1 {
		t.Fatalf("the read that waited across Promote: %d, %v", res.n, res.err)
	}
	if fd, err := r.c.Detach(); err == nil {
		t.Fatalf("Detach of a promoted Conn gave fd %d", fd)
	}
	// The socket's options are its own still (no dup, no net.FileConn
	// defaults): TCP_NODELAY as the accept left it, off.
	var nodelay int
	if err := rawio.Control(r.c, func(fd uintptr) { nodelay, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY) }); err != nil {
		t.Fatal(err)
	}
	if nodelay != 0 {
		t.Errorf("TCP_NODELAY %d after Promote, want the accept's 0", nodelay)
	}
	// Writes and deadlines work in the netpoller.
	msg := bytes.Repeat([]byte("p"), 4<<20)
	wch := make(chan result, 1)
	go func() {
		n, err := r.c.Write(msg)
		wch <- result{n, err}
	}()
	if got, err := io.ReadAll(io.LimitReader(r.client, int64(len(msg)))); err != nil || len(got) != len(msg) {
		t.Fatalf("client read %d, %v", len(got), err)
	}
	if res := await(t, wch); res.err != nil || res.n != len(msg) {
		t.Fatalf("write after Promote: %d, %v", res.n, res.err)
	}
	_ = r.c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if res := await(t, readAsync(r.c, make([]byte, 1))); !errors.Is(res.err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline after Promote: %v", res.err)
	}
	_ = r.c.SetReadDeadline(time.Time{})
	// Close ends a waiting read with net.ErrClosed, as before Promote.
	ch = readAsync(r.c, make([]byte, 1))
	held(t, &r.c.rd.op)
	if err := r.c.Close(); err != nil {
		t.Fatal(err)
	}
	if res := await(t, ch); !errors.Is(res.err, net.ErrClosed) {
		t.Fatalf("waiting read after Close: %v", res.err)
	}
	if err := r.c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

func TestListenerClose(t *testing.T) {
	r := newRig(t)
	ch := make(chan error, 1)
	go func() {
		c, err := r.l.Accept()
		if c != nil {
			_ = c.Close()
		}
		ch <- err
	}()
	held(t, &r.l.mu)
	if err := r.l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ch:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
	// The listener closes too: nothing listens on the port any more (the
	// Listener's dup no longer holds it open).
	_ = r.ln.Close()
	if c, err := net.DialTimeout("tcp", r.ln.Addr().String(), time.Second); err == nil {
		_ = c.Close()
		t.Fatal("the port still accepts after both closes")
	}
}

func TestPollerCloseEndsWaits(t *testing.T) {
	r := newRig(t)
	ch := readAsync(r.c, make([]byte, 1))
	held(t, &r.c.rd.op)
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	if res := await(t, ch); !errors.Is(res.err, ErrClosed) {
		t.Fatalf("read after the Poller closed: %v", res.err)
	}
	// Accepting into a closed Poller fails and closes what it accepted.
	nc, err := net.DialTCP("tcp", nil, r.ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if c, err := r.l.Accept(); !errors.Is(err, ErrClosed) {
		if c != nil {
			_ = c.Close()
		}
		t.Fatalf("Accept into a closed Poller: %v", err)
	}
}

// Many connections at once, each echoing: the slots grow and every event
// reaches its own Conn.
func TestPollerManyConns(t *testing.T) {
	r := newRig(t)
	const n = 300
	clients := make([]*net.TCPConn, n)
	conns := make([]*Conn, n)
	for i := range clients {
		clients[i], conns[i] = r.dial(t)
	}
	defer func() {
		for i := range clients {
			_ = clients[i].Close()
			_ = conns[i].Close()
		}
	}()
	if got := r.p.Len(); got != n+1 {
		t.Fatalf("poller holds %d conns, want %d", got, n+1)
	}
	chs := make([]chan result, n)
	for i := range conns {
		chs[i] = readAsync(conns[i], make([]byte, 4))
	}
	for i := n - 1; i >= 0; i-- {
		if _, err := clients[i].Write([]byte{byte(i), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range chs {
		if res := await(t, chs[i]); res.err != nil || res.n != 4 {
			t.Fatalf("conn %d: %d, %v", i, res.n, res.err)
		}
	}
}

// Read and Write allocate nothing, in the Poller and once promoted: a TLS
// session reads its records through them.
func TestConnAllocations(t *testing.T) {
	if raceOn {
		t.Skip("the race detector allocates")
	}
	r := newRig(t)
	msg, buf := []byte("ping"), make([]byte, 4)
	for _, promoted := range []bool{false, true} {
		if promoted {
			if err := r.c.Promote(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := r.client.Write(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(r.c, buf); err != nil {
				t.Fatal(err)
			}
			if _, err := r.c.Write(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(r.client, buf); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("promoted %v: %.2f allocations per round trip, want 0", promoted, allocs)
		}
	}
}
