package session_test

// Careless and hostile clients after login: results they do not read,
// messages they never finish, message types and lengths PostgreSQL would
// refuse, and requests over max_memory_usage. Each case asserts the
// client's answer and that the pool's other clients and idle servers are
// unaffected.

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// hmRaw logs in through pg_doorman with pgconn and hands over the socket,
// for a client that then speaks (or does not speak) the protocol by hand.
func hmRaw(t *testing.T, d *apptest.Instance) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	hc, err := hijack(pc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hc.Conn.Close() })
	return hc.Conn
}

// hmFrame builds a frontend message with a declared length that may lie.
func hmFrame(typ byte, declared uint32, body []byte) []byte {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], declared)
	return append(b, body...)
}

func hmQuery(sql string) []byte {
	body := append([]byte(sql), 0)
	return hmFrame('Q', uint32(4+len(body)), body)
}

// hmReadError reads backend messages until an ErrorResponse and returns it
// with whatever follows before the connection ends or ReadyForQuery comes.
func hmReadError(t *testing.T, c net.Conn, within time.Duration) (*pgproto3.ErrorResponse, bool) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(within)))
	fe := pgproto3.NewFrontend(c, c)
	var er *pgproto3.ErrorResponse
	for {
		m, err := fe.Receive()
		if err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "no answer within %s", within)
			return er, false // connection closed
		}
		switch m := m.(type) {
		case *pgproto3.ErrorResponse:
			cp := *m
			er = &cp
		case *pgproto3.ReadyForQuery:
			return er, true
		}
	}
}

// hmBackends lists the backend PIDs of user app (pg_doorman's servers).
func hmBackends(t *testing.T) []int {
	t.Helper()
	pids := pg.BackendPIDs(t, "app")
	sort.Ints(pids)
	return pids
}

// hmWarm opens n server connections in the pool by running n concurrent
// transactions, and returns their PIDs once all are idle in the pool.
func hmWarm(t *testing.T, d *apptest.Instance, n int) []int {
	t.Helper()
	ctx := context.Background()
	conns := make([]*pgconn.PgConn, n)
	for i := range conns {
		pc, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
		require.NoError(t, err)
		conns[i] = pc
		require.NoError(t, pc.Exec(ctx, "BEGIN; SELECT 1").Close())
	}
	for _, pc := range conns {
		require.NoError(t, pc.Exec(ctx, "COMMIT").Close())
		require.NoError(t, pc.Close(ctx))
	}
	p, _ := d.Daemon.Pools.Lookup("appdb", "app")
	require.Eventually(t, func() bool { st := p.Conns().Stats(); return st.Idle == n && st.Busy == 0 }, 5*time.Second, 10*time.Millisecond)
	pids := hmBackends(t)
	require.Len(t, pids, n)
	return pids
}

func hmRequireWorks(t *testing.T, d *apptest.Instance) {
	t.Helper()
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	require.NoError(t, c.QueryRow(ctx, "SELECT 41 + 1").Scan(&n))
	require.Equal(t, 42, n)
}

// TestHostileProtocolViolationEndsOnlyThatClient: bad type bytes and
// lengths get PostgreSQL's FATAL and a close; the pool's idle servers (and
// the server the client held in a transaction, which is at a message
// boundary) stay.
func TestHostileProtocolViolationEndsOnlyThatClient(t *testing.T) {
	tests := []struct {
		name    string
		inTx    bool
		send    []byte
		code    string
		message string
	}{
		{"unknown type z", false, hmFrame('z', 4, nil), "08P01", "invalid frontend message type 122"},
		{"unknown type z inside a transaction", true, hmFrame('z', 4, nil), "08P01", "invalid frontend message type 122"},
		{"password message after login", false, hmFrame('p', 8, []byte("abc\x00")), "08P01", "invalid frontend message type 112"},
		{"length below 4", false, hmFrame('Q', 3, nil), "08P01", "invalid message length"},
		{"length below 4 inside a transaction", true, hmFrame('Q', 0, nil), "08P01", "invalid message length"},
		{"Sync of 20000 bytes", false, hmFrame('S', 20004, nil), "08P01", "invalid message length"},
		{"declared length over 1 GB", false, hmFrame('Q', 0x7fffffff, nil), "54000", "longer than the limit"},
	}
	d := start(t, "", "transaction", 5)
	before := hmWarm(t, d, 5)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := hmRaw(t, d)
			if tt.inTx {
				_, err := c.Write(hmQuery("BEGIN"))
				require.NoError(t, err)
				er, ok := hmReadError(t, c, 5*time.Second)
				require.True(t, ok)
				require.Nil(t, er)
			}
			_, err := c.Write(tt.send)
			require.NoError(t, err)
			er, rfq := hmReadError(t, c, 5*time.Second)
			require.False(t, rfq, "the connection must end")
			require.NotNil(t, er, "a FATAL ErrorResponse before the close")
			require.Equal(t, "FATAL", er.Severity)
			require.Equal(t, tt.code, er.Code)
			require.Contains(t, er.Message, tt.message)
			p, _ := d.Daemon.Pools.Lookup("appdb", "app")
			require.Eventually(t, func() bool { return p.Conns().Stats().Busy == 0 }, 5*time.Second, 10*time.Millisecond)
			require.Equal(t, before, hmBackends(t), "the pool's server connections are untouched")
			hmRequireWorks(t, d)
		})
	}
	require.Equal(t, before, hmBackends(t))
}

// TestHostileStallMidMessage: a client that sends the header of a large
// Query and a little of its body, then stops, loses its server after
// proxy_copy_data_timeout; the pool serves others again.
func TestHostileStallMidMessage(t *testing.T) {
	tests := []struct {
		name string
		size int // declared body size
	}{
		{"streamed query (over message_size_to_be_stream)", 2 << 20},
		{"buffered query", 200 << 10},
	}
	d := start(t, "  proxy_copy_data_timeout: 1s\n  message_size_to_be_stream: 1MB", "transaction", 2)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stalled := make([]net.Conn, 2) // as many as the pool has servers
			for i := range stalled {
				stalled[i] = hmRaw(t, d)
				_, err := stalled[i].Write(hmQuery("BEGIN"))
				require.NoError(t, err)
				_, ok := hmReadError(t, stalled[i], 5*time.Second)
				require.True(t, ok)
				msg := hmFrame('Q', uint32(4+tt.size), []byte("SELECT '"+strings.Repeat("x", 64<<10)))
				_, err = stalled[i].Write(msg)
				require.NoError(t, err)
			}
			t0 := time.Now()
			for _, c := range stalled {
				er, rfq := hmReadError(t, c, 10*time.Second)
				require.False(t, rfq)
				require.NotNil(t, er)
				require.Equal(t, "08P01", er.Code)
				require.Contains(t, er.Message, "proxy_copy_data_timeout")
			}
			require.Less(t, time.Since(t0), 8*time.Second, "bounded by the timeout, not by the client")
			hmRequireWorks(t, d)
			p, _ := d.Daemon.Pools.Lookup("appdb", "app")
			require.Eventually(t, func() bool { return p.Conns().Stats().Busy == 0 }, 5*time.Second, 10*time.Millisecond)
			// Whatever is left in the pool is clean: no backend in a transaction.
			require.Zero(t, pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app' AND state <> 'idle'"))
		})
	}
}

// TestHostileNonReadingClientsOfLargeResult: four clients start a 100 MB
// result each and never read. PostgreSQL ends up blocked writing to
// pg_doorman (backpressure), pg_doorman's heap stays bounded, and other
// clients are served meanwhile.
func TestHostileNonReadingClientsOfLargeResult(t *testing.T) {
	const heapBound = 64 << 20
	d := start(t, "  tcp_socket_buffer_size: 64KB", "transaction", 5)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	base := heap()
	var conns []net.Conn
	for i := 0; i < 4; i++ {
		c := hmRaw(t, d)
		require.NoError(t, c.(*net.TCPConn).SetReadBuffer(64<<10))
		_, err := c.Write(hmQuery("SELECT repeat('x',1000) FROM generate_series(1,100000)"))
		require.NoError(t, err)
		conns = append(conns, c)
	}
	// Backpressure reached PostgreSQL: its four backends wait to write.
	require.Eventually(t, func() bool {
		return pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app' AND wait_event = 'ClientWrite'") == 4
	}, 20*time.Second, 20*time.Millisecond, "four backends blocked in ClientWrite")
	grown := int64(heap()) - int64(base)
	t.Logf("heap in use: %d MB before, growth %d KB with four non-reading 100 MB results", base>>20, grown>>10)
	require.Less(t, grown, int64(heapBound))
	hmRequireWorks(t, d)
	// The clients go away with a reset: the pool recovers all five servers.
	for _, c := range conns {
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.Close())
	}
	p, _ := d.Daemon.Pools.Lookup("appdb", "app")
	require.Eventually(t, func() bool { return p.Conns().Stats().Busy == 0 }, 10*time.Second, 10*time.Millisecond)
	hmRequireWorks(t, d)
}

// TestHostileLargeResultIsStreamed: the first row of a 100 MB result
// reaches a reading client while PostgreSQL is still producing it, i.e.
// pg_doorman forwards as it reads instead of gathering the result.
func TestHostileLargeResultIsStreamed(t *testing.T) {
	d := start(t, "", "transaction", 1)
	c := hmRaw(t, d)
	_, err := c.Write(hmQuery("SELECT repeat('x',1000) FROM generate_series(1,100000)"))
	require.NoError(t, err)
	fe := pgproto3.NewFrontend(c, c)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	for {
		m, err := fe.Receive()
		require.NoError(t, err)
		if _, ok := m.(*pgproto3.DataRow); ok {
			break
		}
	}
	// We hold the rest unread: the query must still be running.
	require.EqualValues(t, 1, pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app' AND state = 'active' AND query LIKE 'SELECT repeat%'"))
	rows := 1
	for {
		m, err := fe.Receive()
		require.NoError(t, err)
		if _, ok := m.(*pgproto3.DataRow); ok {
			rows++
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	require.Equal(t, 100000, rows)
}

// TestHostileMaxMemoryUsage: a request whose message does not fit the
// budget is refused with ERROR 53200 and the session goes on; the refusal
// is counted.
func TestHostileMaxMemoryUsage(t *testing.T) {
	d := start(t, "  max_memory_usage: 1MB\n  message_size_to_be_stream: 8MB", "transaction", 2)
	big := "SELECT length('" + strings.Repeat("x", 2<<20) + "')"
	t.Run("simple query", func(t *testing.T) {
		c := hmRaw(t, d)
		_, err := c.Write(hmQuery(big))
		require.NoError(t, err)
		er, rfq := hmReadError(t, c, 10*time.Second)
		require.True(t, rfq, "the session goes on")
		require.NotNil(t, er)
		require.Equal(t, "ERROR", er.Severity)
		require.Equal(t, "53200", er.Code)
		require.Contains(t, er.Message, "max_memory_usage")
		_, err = c.Write(hmQuery("SELECT 1"))
		require.NoError(t, err)
		er, rfq = hmReadError(t, c, 5*time.Second)
		require.True(t, rfq)
		require.Nil(t, er)
	})
	t.Run("extended protocol: skipped up to Sync", func(t *testing.T) {
		c := hmRaw(t, d)
		fe := pgproto3.NewFrontend(c, c)
		fe.Send(&pgproto3.Parse{Name: "big", Query: big})
		fe.Send(&pgproto3.Bind{PreparedStatement: "big"})
		fe.Send(&pgproto3.Execute{})
		fe.Send(&pgproto3.Sync{})
		require.NoError(t, fe.Flush())
		er, rfq := hmReadError(t, c, 10*time.Second)
		require.True(t, rfq)
		require.NotNil(t, er)
		require.Equal(t, "53200", er.Code)
		pc := connect(t, d.DSN("app", "app-secret", "appdb"))
		var n int
		require.NoError(t, pc.QueryRow(context.Background(), "SELECT length($1::text)", strings.Repeat("y", 100<<10)).Scan(&n))
		require.Equal(t, 100<<10, n, "a message within the budget still works")
	})
	t.Run("a named Parse inside a transaction: the session ends", func(t *testing.T) {
		before := counterValue(t, d, "pg_doorman_client_errors_total", "reason", "max_memory_usage")
		c := hmRaw(t, d)
		_, err := c.Write(hmQuery("BEGIN"))
		require.NoError(t, err)
		er, rfq := hmReadError(t, c, 5*time.Second)
		require.True(t, rfq)
		require.Nil(t, er)
		fe := pgproto3.NewFrontend(c, c)
		fe.Send(&pgproto3.Parse{Name: "big_in_tx", Query: big})
		fe.Send(&pgproto3.Sync{})
		require.NoError(t, fe.Flush())
		er, rfq = hmReadError(t, c, 10*time.Second)
		require.False(t, rfq, "the connection is closed")
		require.NotNil(t, er)
		require.Equal(t, "FATAL", er.Severity)
		require.Equal(t, "53200", er.Code)
		require.Equal(t, before+1, counterValue(t, d, "pg_doorman_client_errors_total", "reason", "max_memory_usage"),
			"one refused message, one client error")
	})
	require.Positive(t, d.Daemon.Memory.Refusals())
	require.Zero(t, d.Daemon.Memory.Used(), "every buffer given back")
}

// BenchmarkTimeToFirstByte100MB reports the time to the first DataRow of a
// 100 MB result directly and through pg_doorman (medians over b.N runs of
// each, interleaved) and their ratio.
func BenchmarkTimeToFirstByte100MB(b *testing.B) {
	d := apptest.Start(b, poolConfig(b, "", "transaction", 2))
	first := func(dsn string) time.Duration {
		ctx := context.Background()
		pc, err := pgconn.Connect(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer pc.Close(ctx)
		t0 := time.Now()
		rr := pc.ExecParams(ctx, "SELECT repeat('x',1000) FROM generate_series(1,100000)", nil, nil, nil, nil)
		var ttfb time.Duration
		for rr.NextRow() {
			if ttfb == 0 {
				ttfb = time.Since(t0)
			}
		}
		if _, err := rr.Close(); err != nil {
			b.Fatal(err)
		}
		return ttfb
	}
	var direct, pooled []time.Duration
	for i := 0; i < b.N; i++ {
		direct = append(direct, first(pg.SuperDSN("appdb")))
		pooled = append(pooled, first(d.DSN("app", "app-secret", "appdb")))
	}
	med := func(v []time.Duration) time.Duration {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return v[len(v)/2]
	}
	b.ReportMetric(float64(med(direct).Microseconds())/1000, "direct-ttfb-ms")
	b.ReportMetric(float64(med(pooled).Microseconds())/1000, "doorman-ttfb-ms")
	b.ReportMetric(float64(med(pooled))/float64(med(direct)), "ratio")
}
