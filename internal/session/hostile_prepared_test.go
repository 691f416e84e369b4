package session_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// hpTxScript is a pgbench script whose transaction block holds a server
// while other clients of the same pgbench thread still have to prepare.
const hpTxScript = "SELECT 1;\nBEGIN;\nSELECT 1;\nSELECT 1;\nEND;\n"

func TestHostilePreparedPgbenchTransactionScript(t *testing.T) {
	pgbench, err := pgtest.FindBinary("pgbench")
	require.NoError(t, err)
	d := start(t, "", "transaction", 5)
	script := filepath.Join(t.TempDir(), "tx.sql")
	require.NoError(t, os.WriteFile(script, []byte(hpTxScript), 0o644))
	cmd := exec.Command(pgbench, "-n", "-c", "10", "-j", "2", "-t", "200", "-M", "prepared", "-f", script,
		"-h", "127.0.0.1", "-p", fmt.Sprint(d.Port), "-U", "app", "appdb")
	cmd.Env = append(os.Environ(), "PGPASSWORD=app-secret")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	m := failedRE.FindStringSubmatch(string(out))
	require.NotNil(t, m, string(out))
	require.Equal(t, "0", m[1], string(out))
	require.Contains(t, string(out), "number of transactions actually processed: 2000/2000", string(out))
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	t.Logf("%s", out)
	t.Logf("prepared: %d hits, %d misses, %d injected, %d deferred",
		p.Stats.PreparedHits.Load(), p.Stats.PreparedMisses.Load(), p.Stats.PreparedInjected.Load(), p.Stats.PreparedDeferred.Load())
}

// hpHeapInuse is the live heap of this process (pg_doorman runs in it)
// after a full collection.
func hpHeapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// hpPreparedQueries lists the query column of SHOW PREPARED_STATEMENTS.
func hpPreparedQueries(t *testing.T, d *apptest.Instance) []string {
	t.Helper()
	admin := cached(t, d.DSN("admin", "admin-secret", "pgdoorman"), "default_query_exec_mode=simple_protocol")
	rows, err := admin.Query(context.Background(), "SHOW PREPARED_STATEMENTS")
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		v, err := rows.Values()
		require.NoError(t, err)
		out = append(out, v[3].(string))
	}
	require.NoError(t, rows.Err())
	return out
}

func TestHostilePreparedRejectedParsesAreNotCached(t *testing.T) {
	d := start(t, "", "transaction", 2)
	ctx := context.Background()
	const n, size = 40, 2 << 20
	before := hpHeapInuse()
	c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	pad := strings.Repeat("x", size)
	for i := 0; i < n; i++ {
		q := fmt.Sprintf("SELEC %d /* %s */", i, pad)
		_, err := c.Prepare(ctx, fmt.Sprintf("bad%d", i), q, nil)
		require.Equal(t, "42601", pgErr(t, err).Code, "PostgreSQL rejects statement %d", i)
		// The name was not defined, like in PostgreSQL.
		res := c.ExecPrepared(ctx, fmt.Sprintf("bad%d", i), nil, nil, nil).Read()
		require.Equal(t, "26000", pgErr(t, res.Err).Code)
	}
	// A good statement still works on the same connection.
	_, err = c.Prepare(ctx, "good", "SELECT 7", nil)
	require.NoError(t, err)
	res := c.ExecPrepared(ctx, "good", nil, nil, nil).Read()
	require.NoError(t, res.Err)
	require.Equal(t, "7", string(res.Rows[0][0]))

	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	cs := p.Statements.Stats()
	require.Equal(t, uint64(n), cs.Rejected, "every rejected Parse left the pool cache")
	require.Less(t, cs.Bytes, int64(size), "no rejected text is cached")
	for _, q := range hpPreparedQueries(t, d) {
		require.False(t, strings.HasPrefix(q, "SELEC "), "SHOW PREPARED_STATEMENTS lists no rejected statement")
	}
	require.NoError(t, c.Close(ctx))
	pad = ""
	after := hpHeapInuse()
	growth := int64(after) - int64(before)
	t.Logf("heap in use: before %d MB, after %d MB, %d rejected Parses of %d MB", before>>20, after>>20, n, size>>20)
	// 40 × 2 MB cached would be at least 80 MB (160 MB counting the
	// encoded Parse); what may remain are a few message buffers.
	require.Less(t, growth, int64(16<<20), "rejected statements do not pin memory")
}

func TestHostilePreparedManyNamesDefaultBound(t *testing.T) {
	d := start(t, "", "transaction", 2) // default client_prepared_statements_cache_size
	ctx := context.Background()
	const n = 50000
	before := hpHeapInuse()
	c, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	require.NoError(t, err)
	defer c.Close(ctx)
	pad := strings.Repeat("y", 1000)
	for start := 0; start < n; start += 1000 {
		p := c.StartPipeline(ctx)
		for i := start; i < start+1000; i++ {
			p.SendPrepare(fmt.Sprintf("s%d", i), fmt.Sprintf("SELECT %d /* %s */", i, pad), nil)
		}
		require.NoError(t, p.Sync())
		for i := start; i < start+1000; i++ {
			_, err := p.GetResults()
			require.NoError(t, err)
		}
		_, err := p.GetResults()
		require.NoError(t, err) // the Sync
		require.NoError(t, p.Close())
	}
	during := hpHeapInuse()
	t.Logf("heap in use: %d MB before, %d MB with %d names of 1 KB on one client", before>>20, during>>20, n)
	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	require.GreaterOrEqual(t, p.Stats.PreparedClientEvictions.Load(), uint64(n-1024), "the default bound holds the client map at 1024 names")
	// Unbounded, the names would keep ~110 MB of statements alive; the pool
	// cache (8192 entries of ~2 KB) and 1024 client names stay below 40 MB.
	require.Less(t, int64(during)-int64(before), int64(40<<20))

	res := c.ExecPrepared(ctx, fmt.Sprintf("s%d", n-1), nil, nil, nil).Read()
	require.NoError(t, res.Err, "a recent name still works")
	require.Equal(t, fmt.Sprint(n-1), string(res.Rows[0][0]))
	res = c.ExecPrepared(ctx, "s0", nil, nil, nil).Read()
	require.Equal(t, "26000", pgErr(t, res.Err).Code, "an evicted name is unknown, as documented")
}

// hpRaw is a client that writes protocol messages itself, as libpq does:
// all messages of one call in one write.
type hpRaw struct {
	t  *testing.T
	h  *pgconn.HijackedConn
	fe *pgproto3.Frontend
}

func hpConnectRaw(t *testing.T, dsn string) *hpRaw {
	t.Helper()
	c, err := pgconn.Connect(context.Background(), dsn)
	require.NoError(t, err)
	h, err := hijack(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Conn.Close() })
	return &hpRaw{t: t, h: h, fe: h.Frontend}
}

// call sends msgs in one write and returns the types of the answers up to
// ReadyForQuery (ErrorResponse with its code), or up to a read error.
func (r *hpRaw) call(msgs ...pgproto3.FrontendMessage) (got []string, rows []string) {
	r.t.Helper()
	for _, m := range msgs {
		r.fe.Send(m)
	}
	require.NoError(r.t, r.fe.Flush())
	_ = r.h.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		m, err := r.fe.Receive()
		if err != nil {
			return append(got, "read error"), rows
		}
		typ := fmt.Sprintf("%T", m)[len("*pgproto3."):]
		switch m := m.(type) {
		case *pgproto3.ErrorResponse:
			typ += "(" + m.Code + ")"
		case *pgproto3.DataRow:
			rows = append(rows, string(m.Values[0]))
		case *pgproto3.ReadyForQuery:
			return append(got, typ), rows
		}
		got = append(got, typ)
	}
}

func TestHostilePreparedSyncPrepareWhilePoolBusy(t *testing.T) {
	d := start(t, "", "transaction", 1)
	dsn := d.DSN("app", "app-secret", "appdb")
	ctx := context.Background()
	holder, err := pgconn.Connect(ctx, dsn)
	require.NoError(t, err)
	defer holder.Close(ctx)
	_, err = holder.Exec(ctx, "BEGIN").ReadAll()
	require.NoError(t, err) // the only server is held until COMMIT

	// One thread serving both connections, as pgbench does: the prepare
	// must be answered while the holder cannot move.
	b := hpConnectRaw(t, dsn)
	got, _ := b.call(&pgproto3.Parse{Name: "fresh", Query: "SELECT 42"}, &pgproto3.Sync{})
	require.Equal(t, []string{"ParseComplete", "ReadyForQuery"}, got, "no wait for a server (query_wait_timeout is 3s)")
	got, _ = b.call(&pgproto3.Parse{Name: "bad", Query: "SELEC 1"}, &pgproto3.Sync{})
	require.Equal(t, []string{"ParseComplete", "ReadyForQuery"}, got, "deferred: not verified yet")

	_, err = holder.Exec(ctx, "COMMIT").ReadAll()
	require.NoError(t, err)
	got, rows := b.call(&pgproto3.Bind{PreparedStatement: "fresh"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	require.Equal(t, []string{"BindComplete", "DataRow", "CommandComplete", "ReadyForQuery"}, got)
	require.Equal(t, []string{"42"}, rows)
	// The syntax error comes with the first use, and with every use.
	for i := 0; i < 2; i++ {
		got, _ = b.call(&pgproto3.Bind{PreparedStatement: "bad"}, &pgproto3.Execute{}, &pgproto3.Sync{})
		require.Equal(t, []string{"ErrorResponse(42601)", "ReadyForQuery"}, got)
	}
	// The connection goes on working.
	got, rows = b.call(&pgproto3.Bind{PreparedStatement: "fresh"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	require.Equal(t, []string{"BindComplete", "DataRow", "CommandComplete", "ReadyForQuery"}, got)
	require.Equal(t, []string{"42"}, rows)

	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	require.Equal(t, uint64(2), p.Stats.PreparedDeferred.Load())
	for _, q := range hpPreparedQueries(t, d) {
		require.NotEqual(t, "SELEC 1", q, "the rejected statement left the pool cache")
	}

	// With a server free, the Parse is verified at once: the error comes
	// with the Parse, as from PostgreSQL.
	got, _ = b.call(&pgproto3.Parse{Name: "bad2", Query: "SELEC 2"}, &pgproto3.Sync{})
	require.Equal(t, []string{"ErrorResponse(42601)", "ReadyForQuery"}, got)
	got, _ = b.call(&pgproto3.Bind{PreparedStatement: "bad2"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	require.Equal(t, []string{"ErrorResponse(26000)", "ReadyForQuery"}, got)
	require.Equal(t, uint64(2), p.Stats.PreparedDeferred.Load())
}
