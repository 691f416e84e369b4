package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/protocol"
)

// rawClient logs in with pgconn and then speaks the wire protocol itself,
// so that what allocates in this process during a transaction is the
// pooler (which runs in the test process), not a driver.
type rawClient struct {
	nc  net.Conn
	buf []byte
}

func newRawClient(t testing.TB, dsn string) *rawClient {
	t.Helper()
	pc, err := pgconn.Connect(context.Background(), dsn)
	require.NoError(t, err)
	hc, err := hijack(pc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hc.Conn.Close() })
	return &rawClient{nc: hc.Conn, buf: make([]byte, 64<<10)}
}

// roundTrip writes msg and reads until ReadyForQuery, reusing its buffer.
func (c *rawClient) roundTrip(msg []byte) error {
	if _, err := c.nc.Write(msg); err != nil {
		return err
	}
	return c.readReady()
}

// readReady reads until ReadyForQuery, reusing its buffer.
func (c *rawClient) readReady() error {
	var have int
	for {
		for have >= 5 {
			n := 1 + (int(c.buf[1])<<24 | int(c.buf[2])<<16 | int(c.buf[3])<<8 | int(c.buf[4]))
			if have < n {
				break
			}
			if c.buf[0] == protocol.MsgReadyForQuery {
				return nil
			}
			copy(c.buf, c.buf[n:have])
			have -= n
		}
		m, err := c.nc.Read(c.buf[have:])
		if err != nil {
			return err
		}
		if m == 0 {
			return io.ErrNoProgress
		}
		have += m
	}
}

// The forward path allocates nothing per transaction once warm:
// the whole process, pooler included, is measured by AllocsPerRun, and
// must be 0 per transaction.
// forwardCases are the transactions of the forward-path test and
// benchmark: one request each, simple and extended (unnamed statement),
// with prepared_statements (the rewriter) off and on.
func forwardCases() []struct {
	name     string
	prepared bool
	msg      []byte
} {
	simple := protocol.Query{String: "SELECT 1"}.Encode(nil)
	var extended []byte
	extended = protocol.Parse{Query: "SELECT $1::int"}.Encode(extended)
	extended = protocol.Bind{Params: [][]byte{[]byte("7")}}.Encode(extended)
	extended = protocol.Execute{}.Encode(extended)
	extended = protocol.Sync{}.Encode(extended)
	return []struct {
		name     string
		prepared bool
		msg      []byte
	}{
		{"simple, rewriting off", false, simple},
		{"extended unnamed, rewriting off", false, extended},
		{"simple, rewriting on", true, simple},
		{"extended unnamed, rewriting on", true, extended},
	}
}

// forwardConfig is the pool of forwardCases: transaction mode, 2 servers.
func forwardConfig(t testing.TB, prepared bool) string {
	extra := "  prepared_statements: false"
	if prepared {
		extra = "  prepared_statements: true"
	}
	return poolConfig(t, extra, "transaction", 2)
}

func TestForwardPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, tt := range forwardCases() {
		t.Run(tt.name, func(t *testing.T) {
			d := apptest.Start(t, forwardConfig(t, tt.prepared))
			c := newRawClient(t, d.DSN("app", "app-secret", "appdb"))
			for i := 0; i < 50; i++ { // warm: pool, buffers, caches
				require.NoError(t, c.roundTrip(tt.msg))
			}
			allocs := testing.AllocsPerRun(500, func() {
				if err := c.roundTrip(tt.msg); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("%.2f allocations per transaction in the whole process", allocs)
			require.Zero(t, allocs)
		})
	}
}

// TestCoreQueueAllocations: a client that waits in the transaction core's
// queue and then gets its server allocates nothing per transaction once
// warm. Three clients share a pool of one server in turns: one holds it in
// a transaction while the other two wait, so the queue never empties (its
// sentinels are made once) and every turn holds a client's bytes in the
// queue and hands a released server on to the oldest. Before the core
// kept its held buffers (recycle), every wait allocated one. With the core
// turned off (PG_DOORMAN_GENERAL_TRANSACTION_LOOP=false, as make test also
// runs this package) the same turns wait in the pool's own queue on the
// goroutine path, which allocates nothing per turn either.
func TestCoreQueueAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	d := apptest.Start(t, poolConfig(t, "  prepared_statements: false", "transaction", 1))
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	begin := protocol.Query{String: "BEGIN"}.Encode(nil)
	commit := protocol.Query{String: "COMMIT"}.Encode(nil)
	var cl [3]*rawClient
	for i := range cl {
		cl[i] = newRawClient(t, d.DSN("app", "app-secret", "appdb"))
	}
	// waitFor waits until n clients wait in the queue; no allocation.
	waitFor := func(n int64) {
		deadline := time.Now().Add(5 * time.Second)
		for p.Stats.ClientsWaiting.Load() != n {
			if time.Now().After(deadline) {
				t.Fatalf("clients waiting: %d, want %d", p.Stats.ClientsWaiting.Load(), n)
			}
			runtime.Gosched()
		}
	}
	require.NoError(t, cl[0].roundTrip(begin))
	_, err := cl[1].nc.Write(begin)
	require.NoError(t, err)
	waitFor(1)
	_, err = cl[2].nc.Write(begin)
	require.NoError(t, err)
	waitFor(2)
	holder := 0
	turn := func() {
		next := (holder + 1) % len(cl)
		if err := cl[holder].roundTrip(commit); err != nil {
			t.Fatal(err)
		}
		if err := cl[next].readReady(); err != nil { // its BEGIN, sent from the queue
			t.Fatal(err)
		}
		waitFor(1)
		if _, err := cl[holder].nc.Write(begin); err != nil {
			t.Fatal(err)
		}
		waitFor(2)
		holder = next
	}
	for i := 0; i < 50; i++ { // warm
		turn()
	}
	waits := p.Stats.WaitCount.Load()
	allocs := testing.AllocsPerRun(300, turn)
	t.Logf("%.2f allocations per turn in the whole process", allocs)
	require.GreaterOrEqual(t, p.Stats.WaitCount.Load()-waits, uint64(300), "every turn waited in the queue")
	require.Zero(t, allocs)
}

// BenchmarkForwardPath runs one transaction per op, one at a time, from a
// client that speaks the protocol itself to the package's PostgreSQL over
// loopback: through pg_doorman (in this process) for each of
// forwardCases, and directly ("direct, ..."), where the process holds the
// client alone. Besides time and allocations per op (the whole process),
// it reports the process's CPU time per op (user + system, getrusage).
// One transaction at a time, most of that is the Go runtime going idle
// and waking once per round trip, which the direct case pays too; a
// pooled case's figure less the direct one of the same protocol is what
// pg_doorman adds in this serial setting, not its cost under load
// (docs/benchmarks.md measures that with pgbench). make bench writes the
// output to docs/benchmarks-go.md.
func BenchmarkForwardPath(b *testing.B) {
	cases := forwardCases()
	for _, tt := range cases[:2] {
		b.Run("direct, "+strings.TrimSuffix(tt.name, ", rewriting off"), func(b *testing.B) {
			setupUsers(b)
			runForward(b, newRawClient(b, pg.DSN("app", "app-secret", "appdb")), tt.msg)
		})
	}
	for _, tt := range cases {
		b.Run(tt.name, func(b *testing.B) {
			d := apptest.Start(b, forwardConfig(b, tt.prepared))
			runForward(b, newRawClient(b, d.DSN("app", "app-secret", "appdb")), tt.msg)
		})
	}
}

// runForward is one case of BenchmarkForwardPath.
func runForward(b *testing.B, c *rawClient, msg []byte) {
	for i := 0; i < 50; i++ { // warm: pool, buffers, caches
		require.NoError(b, c.roundTrip(msg))
	}
	cpu0 := processCPU(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.roundTrip(msg); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
}

// processCPU is this process's user + system time so far.
func processCPU(t testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pgconnConnect logs in and keeps only the socket, so that a test holding
// many idle clients holds no driver state for them.
func pgconnConnect(ctx context.Context, dsn string) (net.Conn, error) {
	pc, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	hc, err := hijack(pc)
	if err != nil {
		return nil, err
	}
	return hc.Conn, nil
}

// hijack takes pc's socket for a test that speaks the protocol by hand.
// A write of pgconn's that took over 15 ms (a loaded machine) starts its
// background reader, which is stopped after the write but stays blocked
// in a Read of the socket and would take the next bytes that come, say a
// FATAL the test waits for (the flake of TestCoreKillRightAfterAdoption,
// docs/benchmarks-passes.md, "Thirty-sixth pass"). A read deadline in the
// past ends that Read, and the reader stops without keeping anything;
// Receive, which reads through it, returns once it has stopped, with a
// timeout of its own. (pgconn's SyncConn would ping, which needs a server
// and waits in the queue of a busy pool.)
func hijack(pc *pgconn.PgConn) (*pgconn.HijackedConn, error) {
	hc, err := pc.Hijack()
	if err != nil {
		return nil, err
	}
	if err := hc.Conn.SetReadDeadline(time.Unix(1, 0)); err != nil {
		return nil, err
	}
	if m, err := hc.Frontend.Receive(); err == nil {
		return nil, fmt.Errorf("hijack: %T after the login", m)
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fmt.Errorf("hijack: %w", err)
	}
	if err := hc.Conn.SetReadDeadline(time.Time{}); err != nil {
		return nil, err
	}
	return hc, nil
}
