package admin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/procnet"
)

type fakeResource struct{}

func (fakeResource) Close() error { return nil }

func TestCountUsed(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	idle := func(ages ...time.Duration) []pool.IdleConn[fakeResource] {
		out := make([]pool.IdleConn[fakeResource], len(ages))
		for i, a := range ages {
			out[i].ReturnedAt = now.Add(-a)
		}
		return out
	}
	tests := []struct {
		name       string
		idle       []pool.IdleConn[fakeResource]
		checkAfter time.Duration
		want       int
	}{
		{"no idle connections", nil, time.Second, 0},
		{"checks disabled", idle(time.Hour, time.Hour), 0, 0},
		{"negative timeout is disabled", idle(time.Hour), -time.Second, 0},
		{"fresh ones are idle", idle(time.Millisecond, 999*time.Millisecond), time.Second, 0},
		{"at the timeout a checkout probes", idle(time.Second), time.Second, 1},
		{"mixed", idle(time.Millisecond, 2*time.Second, time.Minute), time.Second, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, countUsed(tt.idle, tt.checkAfter, now))
		})
	}
}

func TestPoolsRowIdleSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		in                    poolSnap
		svIdle, svUsed, clIdl string
	}{
		{"nothing used", poolSnap{Conns: pool.Stats{Idle: 3}, ClActive: 4, ClIdle: 2}, "3", "0", "2"},
		{"some need a check", poolSnap{Conns: pool.Stats{Idle: 3}, SvUsed: 2}, "1", "2", "0"},
		// The idle list and the stats are two reads: a connection taken in
		// between must not make sv_idle negative.
		{"used beyond idle is clamped", poolSnap{Conns: pool.Stats{Idle: 1}, SvUsed: 2}, "0", "1", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.in.Database, tt.in.User = "db", "u"
			row := encodeDecode(t, showPools([]poolSnap{tt.in})).row(t, "db", "u")
			require.Equal(t, tt.svIdle, *row["sv_idle"])
			require.Equal(t, tt.svUsed, *row["sv_used"])
			require.Equal(t, tt.clIdl, *row["cl_idle"])
		})
	}
}

func TestShowPoolsExtended(t *testing.T) {
	t.Parallel()
	in := extendedSnap{
		poolSnap: poolSnap{Database: "db", User: "u", Mode: "transaction", ClActive: 2,
			Conns:    pool.Stats{Busy: 1, Idle: 1},
			Counters: counters{Received: 1000, Sent: 2000, WaitTime: 3000, Waits: 4}},
		Xact:  [4]time.Duration{time.Millisecond, 2 * time.Millisecond, 2500 * time.Microsecond, time.Second},
		Query: [4]time.Duration{1500 * time.Nanosecond, 0, 0, 42 * time.Millisecond},
	}
	res := encodeDecode(t, showPoolsExtended([]extendedSnap{in, {poolSnap: poolSnap{Database: "empty", User: "u"}}}))
	require.Equal(t, strings.Fields(
		"database user cl_active cl_waiting cl_active_cancel_req cl_waiting_cancel_req sv_active sv_active_cancel sv_being_canceled sv_idle sv_used sv_tested sv_login maxwait maxwait_us pool_mode paused cl_idle "+
			"bytes_received bytes_sent avg_wait_time_ms xact_p50_ms xact_p90_ms xact_p95_ms xact_p99_ms query_p50_ms query_p90_ms query_p95_ms query_p99_ms"),
		res.Columns, "SHOW POOLS's columns first, in its order")
	row := res.row(t, "db", "u")
	for k, v := range map[string]string{
		"cl_active": "2", "sv_active": "1", "pool_mode": "transaction",
		"bytes_received": "1000", "bytes_sent": "2000", "avg_wait_time_ms": "0.750",
		"xact_p50_ms": "1.000", "xact_p90_ms": "2.000", "xact_p95_ms": "2.500", "xact_p99_ms": "1000.000",
		"query_p50_ms": "0.001", "query_p90_ms": "0.000", "query_p99_ms": "42.000",
	} {
		require.Equal(t, v, *row[k], k)
	}
	empty := res.row(t, "empty", "u")
	require.Equal(t, "0.000", *empty["avg_wait_time_ms"], "no waits: no division by zero")
	require.Equal(t, "0.000", *empty["query_p99_ms"])
}

func TestShowPoolsMemory(t *testing.T) {
	t.Parallel()
	res := encodeDecode(t, showPoolsMemory([]memorySnap{
		{Database: "db", User: "u", PreparedStatements: 3, PreparedBytes: 1234, ServerConns: 2},
		{Database: "idle", User: "u"},
	}))
	row := res.row(t, "db", "u")
	want := map[string]string{
		"prepared_statements_count": "3", "prepared_statements_bytes": "1234",
		"server_connections": "2", "server_read_buffers_bytes": "16384",
		"histograms_bytes": "4096", "total_bytes": "21714",
	}
	for k, v := range want {
		require.Equal(t, v, *row[k], k)
	}
	require.Equal(t, "4096", *res.row(t, "idle", "u")["total_bytes"])
}

func TestShowConnections(t *testing.T) {
	t.Parallel()
	res := encodeDecode(t, showConnections(connectionsSnap{Plain: 5, TLS: 3, Cancel: 2, Other: 1, Clients: 4, Servers: 6}))
	require.Len(t, res.Rows, 1)
	got := map[string]string{}
	for i, c := range res.Columns {
		got[c] = *res.Rows[0][i]
	}
	require.Equal(t, map[string]string{
		"total": "11", "errors": "1", "tls": "3", "plain": "5", "cancel": "2", "clients": "4", "servers": "6",
	}, got)
}

func TestShowSocketStates(t *testing.T) {
	t.Parallel()
	var c procnet.Counts
	c.TCP[procnet.TCPListen] = 2
	c.TCP[procnet.TCPEstablished] = 7
	c.TCP[0] = 1 // a state newer than this code
	c.TCP6[procnet.TCPTimeWait] = 3
	c.Unix = procnet.UnixCounts{Connected: 4, Unconnected: 1, Dgram: 2, SeqPacket: 1, Other: 1}
	c.Unknown = 5
	res := encodeDecode(t, showSocketStates(c))
	require.Len(t, res.Rows, 1)
	require.Len(t, res.Columns, 13+13+7+1)
	got := map[string]string{}
	for i, col := range res.Columns {
		got[col] = *res.Rows[0][i]
		require.Equal(t, uint32(oidInt8), res.OIDs[i], col)
	}
	for k, v := range map[string]string{
		"tcp_listen": "2", "tcp_established": "7", "tcp_bound_inactive": "0", "tcp_syn_sent": "0",
		"tcp6_time_wait": "3", "tcp6_new_syn_recv": "0", "tcp6_bound_inactive": "0",
		"unix_connected": "4", "unix_unconnected": "1", "unix_dgram": "2", "unix_seq_packet": "1", "unix_free": "0",
		"unknown": "7",
	} {
		require.Equal(t, v, got[k], k)
	}
	require.Equal(t, "tcp_established", res.Columns[0], "the Rust pg_doorman's order")
	require.Equal(t, "unknown", res.Columns[len(res.Columns)-1])
}

func TestShowSocketsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"not Linux", procnet.ErrUnsupported, "0A000"},
		{"unreadable /proc", errors.New("open /proc/self/fd: permission denied"), "58030"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestConsole(t, testConfig)
			c.readSockets = func() (procnet.Counts, error) { return procnet.Counts{}, tt.err }
			r := query1(t, c, "SHOW SOCKETS")
			require.NotNil(t, r.Err)
			require.Equal(t, tt.code, r.Err.Code)
			require.Len(t, query1(t, c, "SHOW VERSION").Rows, 1, "the session stays usable")
		})
	}
}

func TestShowSocketsLive(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	counts, err := procnet.Read("/proc")
	if errors.Is(err, procnet.ErrUnsupported) {
		t.Skip("SHOW SOCKETS is Linux only")
	}
	require.NoError(t, err)
	r := query1(t, c, "SHOW SOCKETS")
	require.Nil(t, r.Err)
	require.Len(t, r.Rows, 1)
	require.Len(t, r.Columns, len(showSocketStates(counts).Columns))
}
