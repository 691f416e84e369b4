//go:build linux

package session_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/session"
)

// parkedCount asks the sessions how many are parked (not the goroutine
// count, which a loaded machine's stragglers blur).
func parkedCount(d *apptest.Instance) int {
	n := 0
	for _, s := range d.Daemon.Clients.List() {
		if s.Parked() {
			n++
		}
	}
	return n
}

// skipWithCore skips a test of the goroutine path's park policy (when a
// waiting goroutine gives up its buffer, then parks) where the transaction
// core owns idle clients instead: it holds them from their welcome on.
func skipWithCore(t *testing.T, d *apptest.Instance) {
	t.Helper()
	if d.Daemon.Config().General.TransactionLoop {
		t.Skip("general.transaction_loop: idle clients are the transaction core's, not parked by their goroutine")
	}
}

// Idle clients are parked without a goroutine and resume when they speak.
func TestIdleClientsParked(t *testing.T) {
	d := start(t, "", "transaction", 4)
	ctx := context.Background()
	const n = 60
	base := runtime.NumGoroutine()
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		conns[i] = connect(t, d.DSN("app", "app-secret", "appdb"))
		var got int
		require.NoError(t, conns[i].QueryRow(ctx, "SELECT $1::int", i).Scan(&got))
		require.Equal(t, i, got)
	}
	// With a goroutine per client there would be n more than base.
	require.Eventually(t, func() bool { return runtime.NumGoroutine() < base+n/4 }, 5*time.Second, 20*time.Millisecond,
		"idle clients hold no goroutine: %d goroutines, %d before the clients", runtime.NumGoroutine(), base)
	require.Equal(t, n, d.Daemon.Clients.Len())

	// Every parked client resumes, in a transaction too.
	for i, c := range conns {
		tx, err := c.Begin(ctx)
		require.NoError(t, err)
		var got string
		require.NoError(t, tx.QueryRow(ctx, "SELECT $1::text", fmt.Sprint("again ", i)).Scan(&got))
		require.Equal(t, fmt.Sprint("again ", i), got)
		require.NoError(t, tx.Commit(ctx))
	}

	// A parked client that goes away (reset) ends its session.
	require.Eventually(t, func() bool { return runtime.NumGoroutine() < base+n/4 }, 5*time.Second, 20*time.Millisecond)
	for _, c := range conns[:10] {
		nc := c.PgConn().Conn()
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = nc.Close()
	}
	require.Eventually(t, func() bool { return d.Daemon.Clients.Len() == n-10 }, 5*time.Second, 20*time.Millisecond)
}

// Shutdown ends parked clients at once with 58006.
func TestParkedClientsShutdown(t *testing.T) {
	d := start(t, "  shutdown_timeout: 10s", "transaction", 2)
	ctx := context.Background()
	conns := make([]*pgx.Conn, 20)
	for i := range conns {
		conns[i] = connect(t, d.DSN("app", "app-secret", "appdb"))
		require.NoError(t, conns[i].Ping(ctx))
	}
	require.Eventually(t, func() bool { return parkedCount(d) == len(conns) }, 10*time.Second, 20*time.Millisecond)
	begin := time.Now()
	d.Daemon.Shutdown()
	require.NoError(t, d.Wait(5*time.Second))
	require.Less(t, time.Since(begin), 3*time.Second, "idle clients do not wait for shutdown_timeout")
	for _, c := range conns {
		_, err := c.Exec(ctx, "SELECT 1")
		require.Error(t, err)
	}
}

// What a parked idle client costs the pooler's Go memory (heap in use and
// goroutine stacks, after a GC; the pgx clients of the test are counted
// too, so this is an upper bound). Connection logging is off: the testing
// package keeps a test's log lines in memory until it ends (unless -v),
// about 200 bytes per client that are the test's, not the pooler's.
func TestParkedClientMemory(t *testing.T) {
	d := start(t, "  max_connections: 2000\n  log_client_connections: false\n  log_client_disconnections: false", "transaction", 4)
	ctx := context.Background()
	const n = 1000
	inUse := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc + ms.StackInuse)
	}
	conns := make([]net.Conn, 0, n)
	// Warm the pool and the buffers first.
	c0 := connect(t, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, c0.Ping(ctx))
	before := inUse()
	for i := 0; i < n; i++ {
		pc, err := pgconnConnect(ctx, d.DSN("app", "app-secret", "appdb"))
		require.NoError(t, err)
		conns = append(conns, pc)
	}
	require.Eventually(t, func() bool { return parkedCount(d) >= n }, 10*time.Second, 20*time.Millisecond)
	after := inUse()
	per := float64(after-before) / n
	t.Logf("%.0f bytes of live heap and stack per parked client (%d clients)", per, n)
	bound := 1400.0 // about 965 B when this bound was set: more means what a parked client keeps grew
	if raceEnabled {
		bound = 4096 // the race detector adds its own allocations (2,224 B seen in CI)
	}
	require.Less(t, per, bound)
	for _, c := range conns {
		_ = c.Close()
	}
}

// TestParkedClientKeepsRewriting: a client that parks with nothing in its
// statement rewriter (simple queries only so far) has its statements
// renamed after it resumes, as before it parked: park drops a blank
// rewriter and resume builds a new one. The server (pool of 1) holds the
// statement under a pooler name, not the client's.
func TestParkedClientKeepsRewriting(t *testing.T) {
	d := start(t, "", "transaction", 1)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb")+" default_query_exec_mode=simple_protocol")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	var one int
	require.NoError(t, c.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Eventually(t, func() bool {
		l := d.Daemon.Clients.List()
		return len(l) == 1 && l[0].Parked()
	}, 5*time.Second, 10*time.Millisecond)

	_, err = c.PgConn().Prepare(ctx, "st1", "SELECT $1::int", nil)
	require.NoError(t, err)
	res := c.PgConn().ExecPrepared(ctx, "st1", [][]byte{[]byte("7")}, nil, nil).Read()
	require.NoError(t, res.Err)
	require.Equal(t, "7", string(res.Rows[0][0]))
	var asNamed int
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements WHERE name = 'st1'").Scan(&asNamed))
	require.Zero(t, asNamed, "the statement reached the server renamed: rewriting is on after the park")
}

// A client parked at once after its welcome (it had sent nothing) loses
// nothing it sends next, whether that comes before the park, during it or
// after: the park's check of the socket and epoll's level trigger leave no
// gap. Half of the clients send their first query right after the login,
// the others once their session is parked.
func TestFreshClientParkedAtOnce(t *testing.T) {
	d := start(t, "", "transaction", 2)
	parked := func(c *rawClient) bool {
		for _, s := range d.Daemon.Clients.List() {
			if s.Parked() && s.RemoteAddr.String() == c.nc.LocalAddr().String() {
				return true
			}
		}
		return false
	}
	for i := 0; i < 40; i++ {
		c := newRawClient(t, d.DSN("app", "app-secret", "appdb"))
		if i%2 == 1 {
			require.Eventually(t, func() bool { return parked(c) }, 5*time.Second, 5*time.Millisecond,
				"a client that sent nothing after its welcome is parked")
		}
		require.NoError(t, c.roundTrip(protocol.Query{String: "SELECT 1"}.Encode(nil)), "client %d", i)
		_ = c.nc.Close()
	}
	require.Eventually(t, func() bool { return d.Daemon.Clients.Len() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestParkedClientSocket: a client that has sent nothing since its welcome
// parks deep, its socket a descriptor of the Parker's (parkedSocket, no
// net.Conn); later parks keep the net.Conn. Parked either way, SHOW
// CLIENTS still gets its local address; after it resumes from the deep
// park the socket has the configured TCP options again, not the ones
// net.FileConn gives a new connection (TCP_NODELAY on, keepalive 15 s /
// 15 s / 9), and it parks and resumes again.
func TestParkedClientSocket(t *testing.T) {
	d := start(t, "  tcp_no_delay: false\n  tcp_keepalives_idle: 11\n  tcp_keepalives_interval: 13\n  tcp_keepalives_count: 7", "transaction", 2)
	ctx := context.Background()
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	sess := func() *session.Session {
		list := d.Daemon.Clients.List()
		require.Len(t, list, 1)
		return list[0]
	}
	opts := func() [4]int {
		sc, ok := sess().Conn().(syscall.Conn)
		require.True(t, ok)
		raw, err := sc.SyscallConn()
		require.NoError(t, err)
		var out [4]int
		require.NoError(t, raw.Control(func(fd uintptr) {
			for i, opt := range []int{unix.TCP_NODELAY, unix.TCP_KEEPIDLE, unix.TCP_KEEPINTVL, unix.TCP_KEEPCNT} {
				out[i], err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, opt)
				require.NoError(t, err)
			}
		}))
		return out
	}
	want := [4]int{0, 11, 13, 7}
	require.Equal(t, want, opts(), "as accepted")
	for round := range 3 {
		require.Eventually(t, func() bool { return sess().Parked() }, 5*time.Second, 10*time.Millisecond)
		local := sess().Conn().LocalAddr()
		require.NotNil(t, local, "round %d: a parked client's local address", round)
		require.Equal(t, c.PgConn().Conn().RemoteAddr().String(), local.String())
		var got int
		require.NoError(t, c.QueryRow(ctx, "SELECT $1::int", round).Scan(&got))
		require.Equal(t, round, got)
		require.Equal(t, want, opts(), "round %d: after resuming", round)
	}
}

// TestParkedClientKilled: a parked client that is killed (here by
// shutdown) reads its FATAL error and then the end of the connection,
// whether it parked deep (nothing sent since its welcome) or with its
// net.Conn (after a query).
func TestParkedClientKilled(t *testing.T) {
	for _, spoke := range []bool{false, true} {
		t.Run(fmt.Sprintf("spoke=%v", spoke), func(t *testing.T) {
			d := start(t, "  shutdown_timeout: 10s", "transaction", 2)
			c := hmRaw(t, d)
			fe := pgproto3.NewFrontend(c, c)
			if spoke {
				_, err := c.Write(hmQuery("SELECT 1"))
				require.NoError(t, err)
				er, rfq := hmReadError(t, c, 5*time.Second)
				require.True(t, rfq)
				require.Nil(t, er)
			}
			require.Eventually(t, func() bool {
				list := d.Daemon.Clients.List()
				return len(list) == 1 && list[0].Parked()
			}, 5*time.Second, 10*time.Millisecond)
			d.Daemon.Shutdown()
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			m, err := fe.Receive()
			require.NoError(t, err)
			er, ok := m.(*pgproto3.ErrorResponse)
			require.True(t, ok, "got %T", m)
			require.Equal(t, "FATAL", er.Severity)
			require.Equal(t, "58006", er.Code)
			_, err = fe.Receive()
			require.Error(t, err, "the connection ends after the error")
			require.NoError(t, d.Wait(5*time.Second))
		})
	}
}

// sessionOf returns the session of the client whose socket is c.
func sessionOf(t *testing.T, d *apptest.Instance, c net.Conn) *session.Session {
	t.Helper()
	for _, s := range d.Daemon.Clients.List() {
		if s.RemoteAddr.String() == c.LocalAddr().String() {
			return s
		}
	}
	t.Fatal("no session for the client")
	return nil
}

// TestFirstQuerySoonNotParkedDeep: a client whose first query comes soon
// after its welcome (within freshGrace, 20 ms) is read by its session's
// goroutine: it is not parked deep and resumed for it, which cost a
// client that connects for one transaction 150-400 µs of CPU on the hand
// rig (docs/benchmarks-passes.md, twentieth pass). Its later park, after the query,
// keeps the net.Conn. A client that stays quiet is parked deep
// (TestParkedClientSocket, TestDeepParkedClientReset).
func TestFirstQuerySoonNotParkedDeep(t *testing.T) {
	d := start(t, "", "transaction", 2)
	skipWithCore(t, d)
	// Each client pauses 2 ms after its welcome, on purpose, so that its
	// query is not there yet when the session first looks (parking at
	// once would park every one). A scheduler stall of 20 ms on a loaded
	// machine may still park one: at least one of five must not be.
	const clients = 5
	notDeep := 0
	for i := range clients {
		c := hmRaw(t, d)
		time.Sleep(2 * time.Millisecond) // the client's pause, not synchronisation
		_, err := c.Write(hmQuery("SELECT 1"))
		require.NoError(t, err)
		er, rfq := hmReadError(t, c, 5*time.Second)
		require.True(t, rfq, "client %d", i)
		require.Nil(t, er, "client %d", i)
		s := sessionOf(t, d, c)
		if !s.ParkedDeep() {
			notDeep++
			// Quiet after its query: parked, with its net.Conn.
			require.Eventually(t, s.Parked, 10*time.Second, 5*time.Millisecond, "client %d", i)
			require.False(t, s.ParkedDeep(), "client %d: parked deep after a query", i)
		}
		_, err = c.Write(hmQuery("SELECT 2"))
		require.NoError(t, err)
		er, rfq = hmReadError(t, c, 5*time.Second)
		require.True(t, rfq, "client %d", i)
		require.Nil(t, er, "client %d", i)
	}
	require.Positive(t, notDeep, "every client was parked deep before its first query")
}

// TestDeepParkedClientReset: a client that resets its connection while
// parked deep (nothing sent since its welcome) ends its session, as one
// parked after a query does (TestIdleClientsParked).
func TestDeepParkedClientReset(t *testing.T) {
	d := start(t, "", "transaction", 2)
	conns := make([]net.Conn, 10)
	for i := range conns {
		conns[i] = hmRaw(t, d)
	}
	require.Eventually(t, func() bool { return parkedCount(d) == len(conns) }, 5*time.Second, 10*time.Millisecond)
	for _, c := range conns[:5] {
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.Close()) // RST
	}
	require.Eventually(t, func() bool { return d.Daemon.Clients.Len() == len(conns)-5 }, 5*time.Second, 10*time.Millisecond)
	// The others are still served.
	for _, c := range conns[5:] {
		_, err := c.Write(hmQuery("SELECT 1"))
		require.NoError(t, err)
		er, rfq := hmReadError(t, c, 5*time.Second)
		require.True(t, rfq)
		require.Nil(t, er)
	}
}

// TestReleaseAdapts: a client that comes back soon after each park is
// parked later each time (100, 200, 400, 800 ms, no further), and one that
// then stays away longer than 1.6 s is parked sooner again (adaptRelease).
func TestReleaseAdapts(t *testing.T) {
	d := start(t, "", "transaction", 2)
	skipWithCore(t, d)
	c := newRawClient(t, d.DSN("app", "app-secret", "appdb"))
	s := sessionOf(t, d, c.nc)
	query := func() time.Time {
		t.Helper()
		at := time.Now()
		require.NoError(t, c.roundTrip(protocol.Query{String: "SELECT 1"}.Encode(nil)))
		return at
	}
	waitParked := func(release time.Duration) {
		t.Helper()
		require.Eventually(t, s.Parked, 10*time.Second, 5*time.Millisecond, "parked, release %v", release)
	}
	// The first query resumes the fresh (deep) park: no transaction
	// before it, the release stays.
	query()
	require.Equal(t, 100*time.Millisecond, s.IdleRelease())
	waitParked(100 * time.Millisecond)
	for _, want := range []time.Duration{200, 400, 800, 800} {
		want *= time.Millisecond
		at := query()
		require.Equal(t, want, s.IdleRelease(), "back at once after a park")
		// The park comes 4 releases after the last message: the release
		// ends at least half of want - 25 ms (the grid) after it, and the
		// park's wait 3 × want after that. Not synchronisation: 2 × want
		// is past the release and well before the park.
		time.Sleep(time.Until(at.Add(2 * want)))
		require.False(t, s.Parked(), "parked before its release's end (%v) + 3 releases", want)
		waitParked(want)
	}
	// Away longer than 6.4 s (twice the longest wait before a park) since
	// the last transaction began.
	last := query()
	waitParked(800 * time.Millisecond)
	time.Sleep(time.Until(last.Add(6500 * time.Millisecond))) // the client is slow on purpose
	query()
	require.Equal(t, 400*time.Millisecond, s.IdleRelease(), "back after a long pause")
}

// TestSlowClientWaitsWithoutBuffer: a client quiet for longer than its
// release gives its read buffer back but keeps its goroutine (it is not
// parked) until parkAfter releases have passed; its next wait starts
// without the buffer (Slow), and its queries are answered as before; once
// it comes back within its release it waits with the buffer again.
func TestSlowClientWaitsWithoutBuffer(t *testing.T) {
	d := start(t, "", "transaction", 2)
	skipWithCore(t, d)
	conn, err := pgx.Connect(context.Background(), d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	s := sessionOf(t, d, conn.PgConn().Conn())
	query := func(want int) time.Time {
		t.Helper()
		var got int
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT $1::int + 1", pgx.QueryExecModeSimpleProtocol, want-1).Scan(&got))
		require.Equal(t, want, got)
		return time.Now()
	}

	// The first query resumes the fresh park: release 100 ms, park 400 ms
	// after the last message.
	at := query(1)
	require.False(t, s.Slow())
	require.Eventually(t, s.Slow, 2*time.Second, 5*time.Millisecond, "the release did not come")
	require.False(t, s.Parked(), "parked at its release")
	require.Less(t, time.Since(at), 300*time.Millisecond, "the release came late: the rest of the test does not hold")

	// Quiet past its release again, in a wait that began without the
	// buffer: still slow, and answered.
	time.Sleep(time.Until(at.Add(150 * time.Millisecond))) // the client is slow on purpose
	at = query(2)
	require.True(t, s.Slow(), "came back after its release")
	require.False(t, s.Parked())
	time.Sleep(time.Until(at.Add(120 * time.Millisecond))) // the client is slow on purpose
	at = query(3)
	require.True(t, s.Slow(), "came back after its release")

	// Back at once: the next wait keeps the buffer.
	query(4)
	require.False(t, s.Slow(), "came back within its release")

	// And it is parked after four releases.
	require.Eventually(t, s.Parked, 5*time.Second, 5*time.Millisecond)
	query(5)
}
