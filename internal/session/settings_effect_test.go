package session_test

// Settings whose effect is seen in a session: each test runs the key with
// two values and asserts the difference, so it fails if the key were
// ignored.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/doorman-go/doorman/internal/app"
	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/config"
)

// seConfig is poolConfig with extra keys under pools.appdb (indented by
// four spaces, e.g. "    cleanup_server_connections: false").
func seConfig(t testing.TB, extraGeneral, extraPool string, poolSize int) string {
	cfg := poolConfig(t, extraGeneral, "transaction", poolSize)
	if extraPool == "" {
		return cfg
	}
	return strings.Replace(cfg, "    pool_mode: transaction\n", "    pool_mode: transaction\n"+extraPool+"\n", 1)
}

// seObserved is an in-process pg_doorman whose log lines a test can read.
type seObserved struct {
	*app.App
	Port int
	Logs *observer.ObservedLogs
	Path string // the config file, for a reload
}

// seStartObserved starts pg_doorman like apptest.Start but logs into an
// observer as well as into the test log (apptest has no logger option).
func seStartObserved(t *testing.T, tmpl string) *seObserved {
	t.Helper()
	dir := t.TempDir()
	port := apptest.FreePort(t)
	body := strings.NewReplacer("{{PORT}}", fmt.Sprint(port), "{{DIR}}", dir).Replace(tmpl)
	path := filepath.Join(dir, "pg_doorman.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	cfg, _, err := config.Load(path)
	require.NoError(t, err)
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(zapcore.NewTee(core, zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)).Core()))
	a, err := app.Build(cfg, log, zap.NewAtomicLevel())
	require.NoError(t, err)
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- a.Run(context.Background(), func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("pg_doorman did not start: %v", err)
	}
	t.Cleanup(func() {
		a.Daemon.Shutdown()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("pg_doorman did not stop within 30s")
		}
	})
	return &seObserved{App: a, Port: port, Logs: logs, Path: path}
}

// TestSettingLogClientConnections: "client connected" and "client
// disconnected" are logged exactly when their key is true.
func TestSettingLogClientConnections(t *testing.T) {
	tests := []struct {
		name                  string
		connections, discons  bool
		wantConnect, wantDisc int
	}{
		{"both true (default)", true, true, 1, 1},
		{"connections only", true, false, 1, 0},
		{"disconnections only", false, true, 0, 1},
		{"both false", false, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			general := fmt.Sprintf("  log_client_connections: %t\n  log_client_disconnections: %t", tt.connections, tt.discons)
			d := seStartObserved(t, seConfig(t, general, "", 2))
			dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=app password=app-secret dbname=appdb sslmode=disable", d.Port)
			c := connect(t, dsn)
			var one int
			require.NoError(t, c.QueryRow(context.Background(), "SELECT 1").Scan(&one))
			require.NoError(t, c.Close(context.Background()))
			// The session has ended once the pool counts no client; the
			// disconnect line is written before that.
			p, ok := d.Daemon.Pools.Lookup("appdb", "app")
			require.True(t, ok)
			require.Eventually(t, func() bool { return p.Stats.Clients.Load() == 0 }, 20*time.Second, 10*time.Millisecond)
			require.Len(t, d.Logs.FilterMessage("client connected").All(), tt.wantConnect)
			require.Len(t, d.Logs.FilterMessage("client disconnected").All(), tt.wantDisc)
			if tt.wantConnect == 1 {
				e := d.Logs.FilterMessage("client connected").All()[0]
				require.Equal(t, "app", e.ContextMap()["user"])
				require.Equal(t, "appdb", e.ContextMap()["database"])
			}
		})
	}
}

// TestSettingLogClientParameterStatusChanges: with the pool's key on, each
// parameter change the server reports to the client is logged once, with
// the server's PID; a SET of a parameter PostgreSQL does not report is not,
// and neither is anything with the key off. Session mode reads the server
// in its own loop, transaction mode in the core (or, with it off, in the
// client's goroutine).
func TestSettingLogClientParameterStatusChanges(t *testing.T) {
	for _, mode := range []string{"transaction", "session"} {
		for _, on := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s %t", mode, on), func(t *testing.T) {
				cfg := seConfig(t, "", fmt.Sprintf("    log_client_parameter_status_changes: %t", on), 2)
				cfg = strings.Replace(cfg, "pool_mode: transaction", "pool_mode: "+mode, 1)
				d := seStartObserved(t, cfg)
				c := connect(t, fmt.Sprintf("host=127.0.0.1 port=%d user=app password=app-secret dbname=appdb sslmode=disable", d.Port))
				ctx := context.Background()
				tx, err := c.Begin(ctx)
				require.NoError(t, err)
				_, err = tx.Exec(ctx, "SET work_mem = '8MB'")
				require.NoError(t, err)
				_, err = tx.Exec(ctx, "SET application_name = 'param-log-test'")
				require.NoError(t, err)
				var pid int
				require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
				require.NoError(t, tx.Commit(ctx))
				var one int
				require.NoError(t, c.QueryRow(ctx, "SELECT 1").Scan(&one))
				// The line is written before the answer that carried the
				// ParameterStatus is passed on.
				got := d.Logs.FilterMessage("client parameter changed").All()
				if !on {
					require.Empty(t, got)
					return
				}
				require.Len(t, got, 1, "one reported change: application_name (work_mem is not reported)")
				m := got[0].ContextMap()
				require.Equal(t, "application_name", m["name"])
				require.Equal(t, "param-log-test", m["value"])
				require.EqualValues(t, pid, m["server_pid"])
				require.Equal(t, "app", m["user"])
				require.Equal(t, "appdb", m["database"])
			})
		}
	}
}

// TestSettingLogClientParameterStatusChangesReload: a reload that turns the
// key on applies to a client already connected, at its next change.
func TestSettingLogClientParameterStatusChangesReload(t *testing.T) {
	cfg := seConfig(t, "", "    log_client_parameter_status_changes: false", 2)
	d := seStartObserved(t, cfg)
	c := connect(t, fmt.Sprintf("host=127.0.0.1 port=%d user=app password=app-secret dbname=appdb sslmode=disable", d.Port))
	ctx := context.Background()
	_, err := c.Exec(ctx, "SET application_name = 'before-reload'")
	require.NoError(t, err)
	require.Empty(t, d.Logs.FilterMessage("client parameter changed").All())

	on := strings.Replace(cfg, "log_client_parameter_status_changes: false", "log_client_parameter_status_changes: true", 1)
	body := strings.NewReplacer("{{PORT}}", fmt.Sprint(d.Port), "{{DIR}}", filepath.Dir(d.Path)).Replace(on)
	require.NoError(t, os.WriteFile(d.Path, []byte(body), 0o600))
	require.NoError(t, d.Daemon.Reload())
	_, err = c.Exec(ctx, "SET application_name = 'after-reload'")
	require.NoError(t, err)
	got := d.Logs.FilterMessage("client parameter changed").All()
	require.Len(t, got, 1)
	require.Equal(t, "after-reload", got[0].ContextMap()["value"])
}

// TestSettingServerRoundRobin: with three idle backends, false (LRU) serves
// sequential transactions from the most recently returned one; true
// rotates over all three.
func TestSettingServerRoundRobin(t *testing.T) {
	tests := []struct {
		name         string
		rr           bool
		wantDistinct int
	}{
		{"false: LRU", false, 1},
		{"true: round robin", true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := apptest.Start(t, seConfig(t, fmt.Sprintf("  server_round_robin: %t", tt.rr), "", 3))
			ctx := context.Background()
			// Three clients inside transactions at once: three backends.
			var held []int
			var txs []pgx.Tx
			for range 3 {
				c := connect(t, d.DSN("app", "app-secret", "appdb"))
				tx, err := c.Begin(ctx)
				require.NoError(t, err)
				var pid int
				require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
				held, txs = append(held, pid), append(txs, tx)
			}
			require.Len(t, seDistinct(held), 3, "three backends open")
			for _, tx := range txs {
				require.NoError(t, tx.Commit(ctx))
			}
			c := connect(t, d.DSN("app", "app-secret", "appdb"))
			var seen []int
			for range 6 {
				seen = append(seen, backendPID(t, c))
			}
			require.Len(t, seDistinct(seen), tt.wantDistinct, "backends of six sequential transactions: %v", seen)
			for _, pid := range seen {
				require.Contains(t, held, pid, "no new backend was opened")
			}
			if !tt.rr {
				require.Equal(t, held[2], seen[0], "LRU: the most recently returned backend (last commit)")
			}
		})
	}
}

func seDistinct(pids []int) map[int]bool {
	m := map[int]bool{}
	for _, p := range pids {
		m[p] = true
	}
	return m
}

// TestSettingCleanupServerConnections: with pool_size 1 both clients share
// one backend; a SET by the first reaches the second only when
// cleanup_server_connections is false.
func TestSettingCleanupServerConnections(t *testing.T) {
	tests := []struct {
		name    string
		cleanup bool
		want    string
	}{
		{"true (default): reset before reuse", true, "0"},
		{"false: the SET leaks to the next client", false, "123s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := apptest.Start(t, seConfig(t, "", fmt.Sprintf("    cleanup_server_connections: %t", tt.cleanup), 1))
			ctx := context.Background()
			a := connect(t, d.DSN("app", "app-secret", "appdb"))
			b := connect(t, d.DSN("app", "app-secret", "appdb"))
			_, err := a.Exec(ctx, "SET statement_timeout = '123s'")
			require.NoError(t, err)
			require.Equal(t, backendPID(t, a), backendPID(t, b), "one backend for both")
			var v string
			require.NoError(t, b.QueryRow(ctx, "SHOW statement_timeout").Scan(&v))
			require.Equal(t, tt.want, v)
		})
	}
}

// TestSettingMessageSizeToBeStream: a 4 MB message is streamed (the
// max_memory_usage budget never holds it whole) when it is above
// message_size_to_be_stream and buffered whole when it is below, in both
// directions. The budget's peak is the observable: pg_doorman accounts
// every buffer it holds in it.
func TestSettingMessageSizeToBeStream(t *testing.T) {
	const size = 4 << 20
	tests := []struct {
		name     string
		stream   string
		query    string
		buffered bool
	}{
		{"server DataRow above the threshold: streamed", "1MB", fmt.Sprintf("SELECT length(repeat('x', %d))::int, repeat('x', %d)", size, size), false},
		{"server DataRow below the threshold: buffered", "16MB", fmt.Sprintf("SELECT length(repeat('x', %d))::int, repeat('x', %d)", size, size), true},
		{"client Query above the threshold: streamed", "1MB", "SELECT length('" + strings.Repeat("x", size) + "'), ''", false},
		{"client Query below the threshold: buffered", "16MB", "SELECT length('" + strings.Repeat("x", size) + "'), ''", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := apptest.Start(t, seConfig(t, "  message_size_to_be_stream: "+tt.stream, "", 1))
			c := connect(t, d.DSN("app", "app-secret", "appdb"))
			var n int
			var s string
			require.NoError(t, c.QueryRow(context.Background(), tt.query, pgx.QueryExecModeSimpleProtocol).Scan(&n, &s))
			require.Equal(t, size, n)
			peak := d.Daemon.Memory.Peak()
			t.Logf("memory budget peak: %d bytes", peak)
			if tt.buffered && strings.HasPrefix(tt.name, "server") && d.Daemon.Config().General.TransactionLoop {
				// The transaction core streams every server message it
				// does not read itself, whatever its size.
				require.Less(t, peak, int64(size/2), "the transaction core never holds a DataRow whole")
				return
			}
			if tt.buffered {
				require.GreaterOrEqual(t, peak, int64(size), "the whole message was held")
			} else {
				require.Less(t, peak, int64(size/2), "the message was never held whole")
			}
		})
	}
}
