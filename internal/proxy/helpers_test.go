package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

const waitFor = 10 * time.Second

// echoBackend is a TCP server on 127.0.0.1 standing in for PostgreSQL: it
// greets every connection with its name and a newline, then echoes; on EOF
// from the client it writes "bye" and closes.
type echoBackend struct {
	name   string
	ln     net.Listener
	port   int
	active atomic.Int64
	wg     sync.WaitGroup
}

func newEcho(t *testing.T, name string) *echoBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &echoBackend{name: name, ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
	e.wg.Go(e.serve)
	t.Cleanup(func() { _ = ln.Close(); e.wg.Wait() })
	return e
}

func (e *echoBackend) serve() {
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	}()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
		e.active.Add(1)
		conns.Go(func() {
			defer e.active.Add(-1)
			defer c.Close()
			if _, err := io.WriteString(c, e.name+"\n"); err != nil {
				return
			}
			if _, err := io.Copy(c, c); err == nil {
				_, _ = io.WriteString(c, "bye")
			}
		})
	}
}

func (e *echoBackend) member(role patroni.Role) patroni.Member {
	return patroni.Member{Name: e.name, Role: role, State: patroni.StateRunning, Host: "127.0.0.1", Port: e.port, LagKnown: true}
}

// client is a connection through the proxy that has been greeted.
type client struct {
	t       *testing.T
	conn    net.Conn
	r       *bufio.Reader
	backend string
}

// connect dials addr and reads the backend's greeting.
func connect(t *testing.T, addr net.Addr) *client {
	t.Helper()
	c, err := tryConnect(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.conn.Close() })
	c.t = t
	return c
}

var errRefused = errors.New("refused: closed before the greeting")

func tryConnect(addr net.Addr) (*client, error) {
	conn, err := net.DialTimeout("tcp", addr.String(), waitFor)
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(waitFor))
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		_ = conn.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, errRefused
		}
		return nil, err
	}
	return &client{conn: conn, r: r, backend: strings.TrimSuffix(line, "\n")}, nil
}

// refused asserts that a new connection is closed without a greeting.
func refused(t *testing.T, addr net.Addr) {
	t.Helper()
	c, err := tryConnect(addr)
	if err == nil {
		_ = c.conn.Close()
		t.Fatalf("connection reached backend %s, want refused", c.backend)
	}
	require.ErrorIs(t, err, errRefused)
}

// alive asserts the connection still echoes.
func (c *client) alive() {
	c.t.Helper()
	msg := "ping " + c.backend + "\n"
	_ = c.conn.SetDeadline(time.Now().Add(waitFor))
	_, err := io.WriteString(c.conn, msg)
	require.NoError(c.t, err, "write through connection to %s", c.backend)
	got, err := c.r.ReadString('\n')
	require.NoError(c.t, err, "connection to %s should be alive", c.backend)
	require.Equal(c.t, msg, got)
}

// closed asserts the connection is closed by the proxy (EOF or reset).
func (c *client) closed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(waitFor))
	_, err := c.r.ReadByte()
	require.Error(c.t, err, "connection to %s should be closed", c.backend)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection to %s still open after %s", c.backend, waitFor)
	}
}

// fixture of one cluster "c" behind a fake Patroni.
type harness struct {
	t       *testing.T
	patroni *patronitest.Server
	proxy   *Proxy
	cfg     *proxyconfig.Config
	clock   *patronitest.ManualClock
}

func newHarness(t *testing.T, ports map[string]proxyconfig.Port, members ...patroni.Member) *harness {
	t.Helper()
	h := &harness{t: t, patroni: patronitest.NewServer(t, []byte(`{"members":[]}`))}
	h.setMembers(members...)
	for name, p := range ports {
		p.Listen = "127.0.0.1:0"
		ports[name] = p
	}
	h.cfg = &proxyconfig.Config{
		ClusterUpdateInterval: time.Hour, // topology changes are applied by Refresh
		ListenAddress:         "127.0.0.1:0",
		ConnectTimeout:        2 * time.Second,
		PatroniTimeout:        2 * time.Second,
		MaxTopologyAge:        2 * time.Hour,
		ShutdownTimeout:       time.Second,
		Clusters:              map[string]proxyconfig.Cluster{"c": {Hosts: []string{h.patroni.URL()}, Ports: ports}},
	}
	h.start(Options{Logger: zaptest.NewLogger(t)})
	return h
}

func (h *harness) start(opts Options) {
	h.t.Helper()
	h.proxy = New(h.cfg, opts)
	require.NoError(h.t, h.proxy.Start())
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = h.proxy.Shutdown(ctx)
	})
	h.refresh()
}

func (h *harness) setMembers(members ...patroni.Member) {
	h.patroni.SetCluster(h.t, &patroni.Cluster{Members: members})
}

// update publishes a new member list and applies it.
func (h *harness) update(members ...patroni.Member) {
	h.t.Helper()
	h.setMembers(members...)
	h.refresh()
}

func (h *harness) refresh() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(h.t, h.proxy.Refresh(ctx))
}

func (h *harness) addr(port string) net.Addr {
	h.t.Helper()
	a := h.proxy.PortAddr("c", port)
	require.NotNil(h.t, a, "port %s", port)
	return a
}

func (h *harness) refusedCount(port string, reason Reason) float64 {
	return testutil.ToFloat64(h.proxy.env.metrics.Refused.WithLabelValues("c", port, string(reason)))
}

// waitCut waits until want cuts with reason have been counted on port (the
// count is taken when a forwarding goroutine ends, after the client sees EOF).
func (h *harness) waitCut(port string, reason Reason, want float64) {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return h.cutCount(port, reason) == want }, waitFor, time.Millisecond,
		"want %v cuts for %s on %s, have %v", want, reason, port, h.cutCount(port, reason))
}

func (h *harness) cutCount(port string, reason Reason) float64 {
	return testutil.ToFloat64(h.proxy.env.metrics.Cut.WithLabelValues("c", port, string(reason)))
}

// backendCounts returns the active connections per member name of a port,
// waiting until they add up to want (connections are counted when routed).
func (h *harness) backendCounts(port string, want int) map[string]int {
	h.t.Helper()
	var got map[string]int
	require.Eventually(h.t, func() bool {
		got = map[string]int{}
		total := 0
		for _, b := range h.proxy.Backends("c", port) {
			if b.Active > 0 {
				got[b.Member] = b.Active
			}
			total += b.Active
		}
		return total == want
	}, waitFor, time.Millisecond, "want %d connections on %s", want, port)
	return got
}

func tally(cs []*client) map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		out[c.backend]++
	}
	return out
}

func portAddrString(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
