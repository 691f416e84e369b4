//go:build linux

package session_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/session"
)

// The transaction core (general.transaction_loop) is tested here by what
// only it does; it is on by default on Linux, so every driver, hostile and
// waiting test is its acceptance test too. `make test` runs the package
// again with it off (PG_DOORMAN_GENERAL_TRANSACTION_LOOP=false) for the
// goroutine path, and these tests skip there.

// skipWithoutCore skips a test of the core when the environment turns the
// core off: the variable wins over the test's configuration file.
func skipWithoutCore(t *testing.T) {
	t.Helper()
	if v, ok := os.LookupEnv("PG_DOORMAN_GENERAL_TRANSACTION_LOOP"); ok {
		if on, err := strconv.ParseBool(v); err == nil && !on {
			t.Skip("PG_DOORMAN_GENERAL_TRANSACTION_LOOP turns the transaction core off")
		}
	}
}

func startCore(t *testing.T, mode string, size int) *apptest.Instance {
	t.Helper()
	skipWithoutCore(t)
	d := start(t, "  transaction_loop: true", mode, size)
	require.True(t, d.Daemon.Config().General.TransactionLoop)
	return d
}

// TestCoreRunsClientsWithoutGoroutines: clients of the core hold no
// goroutine, idle or between their transactions, and every kind of
// transaction runs: simple, extended, a block, prepared statements.
func TestCoreRunsClientsWithoutGoroutines(t *testing.T) {
	d := startCore(t, "transaction", 4)
	ctx := context.Background()
	const n = 40
	base := runtime.NumGoroutine()
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		conns[i] = connect(t, d.DSN("app", "app-secret", "appdb"))
	}
	require.Eventually(t, func() bool { return parkedCount(d) == n }, 5*time.Second, 10*time.Millisecond,
		"every idle client is the core's")
	require.Less(t, runtime.NumGoroutine(), base+n/4, "no goroutine per idle client")

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				for k := 0; k < 20; k++ {
					var got int
					if err := c.QueryRow(ctx, "SELECT $1::int", i*100+k).Scan(&got); err != nil {
						return err
					}
					if got != i*100+k {
						return fmt.Errorf("client %d: got %d", i, got)
					}
				}
				if _, err := c.Exec(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol); err != nil {
					return err
				}
				tx, err := c.Begin(ctx)
				if err != nil {
					return err
				}
				var pid1, pid2 int
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid1); err != nil {
					return err
				}
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid2); err != nil {
					return err
				}
				if pid1 != pid2 {
					return fmt.Errorf("client %d: the block moved from backend %d to %d", i, pid1, pid2)
				}
				return tx.Commit(ctx)
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	require.GreaterOrEqual(t, p.Stats.XactCount.Load(), uint64(n*22))
	require.Eventually(t, func() bool { return parkedCount(d) == n && p.Stats.ClientsActive.Load() == 0 }, 5*time.Second, 10*time.Millisecond,
		"all idle in the core again")
	require.Less(t, runtime.NumGoroutine(), base+n/4, "no goroutine per client after their transactions")
}

// TestCoreHandsBackAndTakesAgain: what the core does not run goes to a
// goroutine with the bytes it read, and the client comes back to the core
// at its next idle point: a Query longer than one read, COPY FROM STDIN
// of rows in messages longer than one read (handed back with its server
// attached, mid-transaction), and a FunctionCall.
func TestCoreHandsBackAndTakesAgain(t *testing.T) {
	d := startCore(t, "transaction", 2)
	ctx := context.Background()
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	s := sessionOf(t, d, c.PgConn().Conn())
	require.Eventually(t, s.Parked, 5*time.Second, 10*time.Millisecond)

	long := strings.Repeat("x", 100<<10)
	var n int
	require.NoError(t, c.QueryRow(ctx, "SELECT length('"+long+"')", pgx.QueryExecModeSimpleProtocol).Scan(&n))
	require.Equal(t, len(long), n)
	require.Eventually(t, s.Parked, 5*time.Second, 10*time.Millisecond, "back in the core")

	tag := fmt.Sprintf("core-copy-%d", time.Now().UnixNano())
	var in bytes.Buffer
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&in, "%d\t%s\n", 1_000_000+i, tag)
	}
	sent := in.String()
	res, err := c.PgConn().CopyFrom(ctx, &in, "COPY items (id, note) FROM STDIN")
	require.NoError(t, err)
	require.EqualValues(t, 20000, res.RowsAffected())
	var cnt int
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM items WHERE note = $1", tag).Scan(&cnt))
	require.Equal(t, 20000, cnt)
	var out bytes.Buffer
	res, err = c.PgConn().CopyTo(ctx, &out, fmt.Sprintf("COPY (SELECT id, note FROM items WHERE note = '%s' ORDER BY id) TO STDOUT", tag))
	require.NoError(t, err)
	require.EqualValues(t, 20000, res.RowsAffected())
	require.Equal(t, sent, out.String(), "the rows came back as sent")
	_, err = c.Exec(ctx, "DELETE FROM items WHERE note = $1", tag)
	require.NoError(t, err)
	require.Eventually(t, s.Parked, 5*time.Second, 10*time.Millisecond, "back in the core after COPY")

	// FunctionCall of int4pl (OID 177): 2 + 40, both text.
	rc := newRawClient(t, d.DSN("app", "app-secret", "appdb"))
	fc := []byte{protocol.MsgFunctionCall, 0, 0, 0, 0}
	fc = append(fc, 0, 0, 0, 177, 0, 1, 0, 0, 0, 2)
	for _, a := range []string{"2", "40"} {
		fc = append(fc, 0, 0, 0, byte(len(a)))
		fc = append(fc, a...)
	}
	fc = append(fc, 0, 0)
	l := len(fc) - 1
	fc[1], fc[2], fc[3], fc[4] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
	require.NoError(t, rc.nc.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = rc.nc.Write(fc)
	require.NoError(t, err)
	got := readUntilReady(t, rc.nc)
	require.Contains(t, got, "V:42", "FunctionCallResponse")
	require.NoError(t, rc.roundTrip(protocol.Query{String: "SELECT 1"}.Encode(nil)))

	require.GreaterOrEqual(t, tlMetric(t, d, "pg_doorman_transaction_core_handbacks_total", "reason", "split_message"), 2.0,
		"the long Query and the COPY data")
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_transaction_core_handbacks_total", "reason", "message"), "the FunctionCall")
}

// readUntilReady reads messages up to ReadyForQuery and returns their
// types; a FunctionCallResponse's value is given as V:<value>.
func readUntilReady(t *testing.T, nc net.Conn) []string {
	t.Helper()
	var got []string
	hdr := make([]byte, 5)
	for {
		_, err := io.ReadFull(nc, hdr)
		require.NoError(t, err)
		body := make([]byte, int(hdr[1])<<24|int(hdr[2])<<16|int(hdr[3])<<8|int(hdr[4])-4)
		_, err = io.ReadFull(nc, body)
		require.NoError(t, err)
		typ := string(hdr[0])
		if hdr[0] == 'V' && len(body) > 4 {
			typ += ":" + string(body[4:])
		}
		got = append(got, typ)
		if hdr[0] == protocol.MsgReadyForQuery {
			return got
		}
	}
}

// TestCoreKillInBlock: KILL reaches a client the core runs, idle inside a
// transaction block with its server attached: the client gets the FATAL,
// and the server is rolled back and serves the next client.
func TestCoreKillInBlock(t *testing.T) {
	d := startCore(t, "transaction", 1)
	ctx := context.Background()
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	pid := 0
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	tag := fmt.Sprintf("core-kill-%d", time.Now().UnixNano())
	_, err = tx.Exec(ctx, "INSERT INTO items VALUES ((random()*1e9)::int, $1)", tag)
	require.NoError(t, err)
	s := sessionOf(t, d, c.PgConn().Conn())
	require.NotZero(t, s.ServerPID(), "attached in the block")
	s.Kill("58006", "pooler is shut down now")
	_, err = tx.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.Eventually(t, func() bool { return d.Daemon.Clients.Len() == 0 }, 5*time.Second, 10*time.Millisecond)

	next := connect(t, d.DSN("app", "app-secret", "appdb"))
	require.Equal(t, pid, backendPID(t, next), "rolled back and reused")
	var rows int
	require.NoError(t, next.QueryRow(ctx, "SELECT count(*) FROM items WHERE note = $1", tag).Scan(&rows))
	require.Zero(t, rows, "the killed client's insert was rolled back")
}

// TestCoreHostileFloodWhileWaiting: clients that pipeline megabytes of
// queries while they wait for a server do not make the pooler hold them:
// a waiting client is not read (at most one read is held for it), and each
// resets without harm to the pool or to other clients.
func TestCoreHostileFloodWhileWaiting(t *testing.T) {
	d, p, _, tx := busyPoolWith(t, "  transaction_loop: true")
	ctx := context.Background()
	const clients = 8
	const perClient = 4 << 20
	q := protocol.Query{String: "SELECT 1"}.Encode(nil)
	flood := bytes.Repeat(q, perClient/len(q))
	var wrote sync.WaitGroup
	conns := make([]net.Conn, clients)
	for i := range conns {
		nc, err := pgconnConnect(ctx, d.DSN("app", "app-secret", "appdb"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = nc.Close() })
		conns[i] = nc
		wrote.Add(1)
		go func() {
			defer wrote.Done()
			_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = nc.Write(flood) // stops when the socket buffers are full
		}()
	}
	requireWaiting(t, p)
	wrote.Wait()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap := ms.HeapAlloc
	t.Logf("heap with %d clients flooding while they wait: %d bytes", clients, heap)
	require.Less(t, heap, uint64(clients*perClient/4), "the pooler holds no client's flood")
	// The flooders go (reset); the pool and its other clients go on.
	for _, nc := range conns {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = nc.Close()
	}
	require.NoError(t, tx.Commit(ctx))
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	var one int
	require.NoError(t, c.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Eventually(t, func() bool { return p.Stats.ClientsActive.Load() == 0 && d.Daemon.Clients.Len() == 2 }, 10*time.Second, 10*time.Millisecond,
		"every flooder's session ended: the holder and the new client are left")
}

// TestCoreNoWaitHandsBack: with query_wait_timeout 0 (no waiting at all) a
// client that finds no idle server goes to a goroutine, which connects now
// or refuses, as without the core. (A cancelled wait in the core's queue,
// query_wait_timeout on the loop's clock and a client that leaves while
// queued are TestCancelWhileWaiting, TestQueryWaitTimeout and
// TestClientLeftWhileWaiting, with the core on by default.)
func TestCoreNoWaitHandsBack(t *testing.T) {
	skipWithoutCore(t)
	d := start(t, "  transaction_loop: true\n  query_wait_timeout: 0", "transaction", 1)
	ctx := context.Background()
	holder := connect(t, d.DSN("app", "app-secret", "appdb"))
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	_, err = c.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.Contains(t, err.Error(), "query_wait_timeout")
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_transaction_core_handbacks_total", "reason", "no_wait"))
	require.NoError(t, tx.Commit(ctx))
}

// TestCoreKillRightAfterAdoption: the core takes an adopted client without
// being woken (Core.add), so a Kill that comes at once after the login may
// reach the loop before any event of the client's socket. Each such client
// gets its FATAL error and its end, while another client keeps the loop
// busy with transactions, and nothing is left behind.
func TestCoreKillRightAfterAdoption(t *testing.T) {
	d := startCore(t, "transaction", 2)
	ctx := context.Background()
	busy := connect(t, d.DSN("app", "app-secret", "appdb"))
	stop := make(chan struct{})
	busyErr := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				busyErr <- nil
				return
			default:
			}
			if _, err := busy.Exec(ctx, "SELECT 1"); err != nil {
				busyErr <- err
				return
			}
		}
	}()
	for i := 0; i < 30; i++ {
		c := hmRaw(t, d)
		var s *session.Session
		require.Eventually(t, func() bool {
			for _, x := range d.Daemon.Clients.List() {
				if x.RemoteAddr.String() == c.LocalAddr().String() && x.Parked() {
					s = x
					return true
				}
			}
			return false
		}, 5*time.Second, time.Millisecond, "client %d adopted", i)
		s.Kill("58006", "pooler is shut down now")
		er, rfq := hmReadError(t, c, 5*time.Second)
		require.False(t, rfq)
		require.NotNil(t, er, "client %d got an error before the end", i)
		require.Equal(t, "FATAL", er.Severity)
		require.Equal(t, "58006", er.Code)
	}
	close(stop)
	require.NoError(t, <-busyErr, "the busy client's transactions")
	require.Eventually(t, func() bool { return d.Daemon.Clients.Len() == 1 }, 5*time.Second, 10*time.Millisecond)
	var one int
	require.NoError(t, busy.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

// TestCoreStoppedSentinelStaysQuiet: a client that waits in the core's
// queue starts a sentinel, an acquire in the pool's own queue. When the
// loop's own release serves the client first, the loop stops the sentinel
// and forgets it: the sentinel ends without a post, since it has nothing
// to bring, and the loop is not woken for it. Before, every such wait
// woke the loop once more (an eventfd write and read, an epoll wait).
//
// The waiter keeps the server (a block) until its stopped sentinel has
// left the pool's queue, so that each round starts the same whoever
// removes it, the pool or the sentinel's goroutine. (Before the pool
// passed stopped waits over, a server released while the sentinel was
// still queued went to it and back, and a holder that came meanwhile
// queued and was served by a sentinel's post of its own: the flake of
// stop 54's CI, docs/benchmarks-passes.md, "Thirty-fifth pass".)
func TestCoreStoppedSentinelStaysQuiet(t *testing.T) {
	d := startCore(t, "transaction", 1)
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	dsn := d.DSN("app", "app-secret", "appdb")
	holder, waiter := newRawClient(t, dsn), newRawClient(t, dsn)
	var s *session.Session
	for _, x := range d.Daemon.Clients.List() {
		s = x
		break
	}
	require.NotNil(t, s)
	begin := protocol.Query{String: "BEGIN"}.Encode(nil)
	commit := protocol.Query{String: "COMMIT"}.Encode(nil)
	poolIs := func(idle, waiting int) func() bool {
		return func() bool { st := p.Conns().Stats(); return st.Idle == idle && st.Waiting == waiting }
	}
	const rounds = 10
	for i := 0; i < rounds; i++ {
		require.Eventually(t, poolIs(1, 0), 5*time.Second, time.Millisecond,
			"round %d: the server is idle and nobody waits", i)
		require.NoError(t, holder.roundTrip(begin)) // the only server is the holder's
		done := make(chan error, 1)
		go func() { done <- waiter.roundTrip(begin) }()
		require.Eventually(t, func() bool { return p.Stats.ClientsWaiting.Load() == 1 }, 5*time.Second, time.Millisecond,
			"round %d: the waiter queues in the core", i)
		require.Eventually(t, poolIs(0, 1), 5*time.Second, time.Millisecond,
			"round %d: its sentinel waits in the pool's queue", i)
		require.NoError(t, holder.roundTrip(commit)) // the loop hands the server on
		require.NoError(t, <-done, "round %d: the waiter is served", i)
		require.Eventually(t, poolIs(0, 0), 5*time.Second, time.Millisecond,
			"round %d: the stopped sentinel left the pool's queue", i)
		require.NoError(t, waiter.roundTrip(commit)) // to the idle set: nobody waits
		require.Zero(t, s.CoreSentinelBacks(), "round %d: a stopped sentinel posted to the loop", i)
	}
	require.Never(t, func() bool { return s.CoreSentinelBacks() > 0 }, 200*time.Millisecond, 5*time.Millisecond,
		"a stopped sentinel with nothing to bring posted to the loop")
}

// TestCoreLoopFailure: when the core's loop cannot go on (its epoll set
// fails), each of its clients is told (FATAL 58000) before its socket is
// closed, the failure is counted as transaction_core_failures_total{op=
// "loop"}, and the daemon goes on accepting clients, which the goroutine
// path then serves.
func TestCoreLoopFailure(t *testing.T) {
	d := startCore(t, "transaction", 2)
	ctx := context.Background()
	before := counterValue(t, d, "pg_doorman_transaction_core_failures_total", "op", "loop")
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	s := sessionOf(t, d, c.PgConn().Conn())
	require.Eventually(t, s.InCore, 5*time.Second, 10*time.Millisecond, "the idle client is the core's")
	s.BreakCore()
	_, err := c.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.Contains(t, err.Error(), "58000", "the client was told why")
	require.Eventually(t, func() bool {
		return counterValue(t, d, "pg_doorman_transaction_core_failures_total", "op", "loop") == before+1
	}, 5*time.Second, 10*time.Millisecond)
	next := connect(t, d.DSN("app", "app-secret", "appdb"))
	var n int
	require.NoError(t, next.QueryRow(ctx, "SELECT 8").Scan(&n))
	require.Equal(t, 8, n)
}
