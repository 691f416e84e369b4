package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

var (
	pg       *pgtest.Cluster
	once     sync.Once
	verifier string
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, pgtest.Options{MaxConnections: 300}, func(c *pgtest.Cluster) { pg = c }))
}

func setup(t *testing.T) {
	once.Do(func() {
		verifier = pg.CreateUser(t, "bench", "bench-secret", "scram-sha-256")
		pg.CreateDatabase(t, "benchdb")
		pg.ExecDB(t, "benchdb", "GRANT ALL ON SCHEMA public TO bench")
		pg.ExecDB(t, "benchdb", "CREATE TABLE second (id int)")
		pg.ExecDB(t, "benchdb", "GRANT ALL ON second TO bench")
	})
}

func config(t *testing.T, general string, pools ...string) string {
	setup(t)
	if len(pools) == 0 {
		pools = []string{"benchdb"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "general:\n  host: 127.0.0.1\n  port: {{PORT}}\n  unix_socket_dir: \"{{DIR}}\"\n  admin_username: admin\n  admin_password: admin-secret\n%s\npools:\n", general)
	for _, p := range pools {
		fmt.Fprintf(&b, "  %s:\n    server_host: 127.0.0.1\n    server_port: %d\n    server_database: benchdb\n    users:\n      - username: bench\n        password: '%s'\n        pool_size: 10\n", p, pg.Port, verifier)
	}
	return b.String()
}

func dial(t *testing.T, d *apptest.Instance, db string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, d.DSN("bench", "bench-secret", db)+" default_query_exec_mode=exec")
}

func TestReloadAddsAndRemovesPools(t *testing.T) {
	d := apptest.Start(t, config(t, ""))
	_, err := dial(t, d, "other")
	require.Error(t, err, "pool not configured yet")

	d.WriteConfig(t, config(t, "", "benchdb", "other"))
	require.NoError(t, d.Daemon.Reload())
	c, err := dial(t, d, "other")
	require.NoError(t, err, "pool added by reload")
	var db string
	require.NoError(t, c.QueryRow(context.Background(), "SELECT current_database()").Scan(&db))
	require.Equal(t, "benchdb", db, "server_database maps the pool to the real database")
	c.Close(context.Background())

	d.WriteConfig(t, config(t, "", "other"))
	require.NoError(t, d.Daemon.Reload())
	_, err = dial(t, d, "benchdb")
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe, "pool removed by reload")
	require.Equal(t, "3D000", pe.Code)

	// A broken file keeps the running config.
	d.WriteConfig(t, "general:\n  port: {{PORT}}\n  bogus_key: 1\npools: {}\n")
	require.Error(t, d.Daemon.Reload())
	c, err = dial(t, d, "other")
	require.NoError(t, err, "failed reload keeps the old pools")
	c.Close(context.Background())
}

// TestReloadKeepsTransactionLoop: general.transaction_loop is fixed at
// start; a reload that changes it (warned in the log) leaves the running
// configuration with the value that runs, both ways.
func TestReloadKeepsTransactionLoop(t *testing.T) {
	if os.Getenv("PG_DOORMAN_GENERAL_TRANSACTION_LOOP") != "" {
		t.Skip("the environment sets general.transaction_loop over the file")
	}
	for _, atStart := range []bool{true, false} {
		t.Run(fmt.Sprintf("start=%v", atStart), func(t *testing.T) {
			d := apptest.Start(t, config(t, fmt.Sprintf("  transaction_loop: %v", atStart)))
			require.Equal(t, atStart, d.Daemon.Config().General.TransactionLoop)
			d.WriteConfig(t, config(t, fmt.Sprintf("  transaction_loop: %v\n  query_wait_timeout: 7s", !atStart)))
			require.NoError(t, d.Daemon.Reload())
			require.Equal(t, 7*time.Second, d.Daemon.Config().General.QueryWaitTimeout, "the rest of the file applies")
			require.Equal(t, atStart, d.Daemon.Config().General.TransactionLoop, "the running value stays")
			c, err := dial(t, d, "benchdb")
			require.NoError(t, err)
			defer c.Close(context.Background())
			var one int
			require.NoError(t, c.QueryRow(context.Background(), "SELECT 1").Scan(&one))
			require.Equal(t, 1, one)
		})
	}
}

// TestReloadKeepsSyslogProgName: general.syslog_prog_name is fixed at start
// (the logger is built once); a reload that sets it (warned in the log)
// leaves the running configuration as it runs, with the rest applied.
func TestReloadKeepsSyslogProgName(t *testing.T) {
	d := apptest.Start(t, config(t, ""))
	d.WriteConfig(t, config(t, "  syslog_prog_name: pg_doorman\n  query_wait_timeout: 7s"))
	require.NoError(t, d.Daemon.Reload())
	require.Equal(t, 7*time.Second, d.Daemon.Config().General.QueryWaitTimeout, "the rest of the file applies")
	require.Empty(t, d.Daemon.Config().General.SyslogProgName, "the running value stays")
}

func TestMaxConnections(t *testing.T) {
	d := apptest.Start(t, config(t, "  max_connections: 2"))
	a, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	defer a.Close(context.Background())
	b, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	defer b.Close(context.Background())
	_, err = dial(t, d, "benchdb")
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "53300", pe.Code)
	require.Equal(t, "sorry, too many clients already", pe.Message)
}

func TestGracefulShutdown(t *testing.T) {
	d := apptest.Start(t, config(t, "  shutdown_timeout: 2s"))
	ctx := context.Background()
	idle, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	busy, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	tx, err := busy.Begin(ctx)
	require.NoError(t, err)
	id := int(time.Now().UnixNano() % 1_000_000_000) // this run's row: the test may run again on the same database (-count)
	_, err = tx.Exec(ctx, "INSERT INTO second VALUES ($1)", id)
	require.NoError(t, err)

	d.Daemon.Shutdown()
	// New connections are refused at once.
	require.Eventually(t, func() bool { _, err := dial(t, d, "benchdb"); return err != nil }, 2*time.Second, 10*time.Millisecond)
	// The idle client is closed; the one inside a transaction may finish.
	require.Eventually(t, func() bool { return idle.Ping(ctx) != nil }, 2*time.Second, 10*time.Millisecond)
	require.NoError(t, tx.Commit(ctx), "a transaction in flight finishes during the grace period")
	require.NoError(t, d.Wait(5*time.Second))
	sc, err := pgx.Connect(ctx, pg.SuperDSN("benchdb"))
	require.NoError(t, err)
	defer sc.Close(ctx)
	var n int
	require.NoError(t, sc.QueryRow(ctx, "SELECT count(*) FROM second WHERE id = $1", id).Scan(&n))
	require.Equal(t, 1, n, "the committed row is there")
}

func TestShutdownTimeoutClosesStragglers(t *testing.T) {
	tests := []struct {
		name string
		// busy leaves the client in a transaction and returns the
		// statement that then fails.
		busy func(t *testing.T, c *pgx.Conn) func() error
	}{
		{"idle in transaction", func(t *testing.T, c *pgx.Conn) func() error {
			tx, err := c.Begin(context.Background())
			require.NoError(t, err)
			return func() error { _, err := tx.Exec(context.Background(), "SELECT 1"); return err }
		}},
		{"inside a statement", func(t *testing.T, c *pgx.Conn) func() error {
			// The pooler waits for the server's answer here, not for
			// the client: the cut must still come at shutdown_timeout.
			done := make(chan error, 1)
			go func() { _, err := c.Exec(context.Background(), "SELECT pg_sleep(30) /* straggler */"); done <- err }()
			require.Eventually(t, func() bool {
				return pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%/* straggler */' AND state = 'active'") == 1
			}, 5*time.Second, 10*time.Millisecond)
			// The cut server connection leaves the backend sleeping
			// (PostgreSQL notices a closed socket only when it writes).
			t.Cleanup(func() {
				pg.Exec(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%/* straggler */' AND pid <> pg_backend_pid()")
			})
			return func() error { return <-done }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := apptest.Start(t, config(t, "  shutdown_timeout: 300ms"))
			c, err := dial(t, d, "benchdb")
			require.NoError(t, err)
			result := tt.busy(t, c)
			start := time.Now()
			d.Daemon.Shutdown()
			require.NoError(t, d.Wait(5*time.Second))
			require.Less(t, time.Since(start), 3*time.Second)
			err = result()
			require.Error(t, err, "the client still in a transaction was closed")
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				require.Equal(t, "58006", pe.Code)
			}
		})
	}
}

var pgbenchTPS = regexp.MustCompile(`number of failed transactions: (\d+)`)

func TestPgbenchThroughPooler(t *testing.T) {
	pgbench, err := pgtest.FindBinary("pgbench")
	require.NoError(t, err)
	d := apptest.Start(t, config(t, "  query_wait_timeout: 30s"))
	env := append(os.Environ(), "PGPASSWORD=bench-secret")
	initCmd := exec.Command(pgbench, "-i", "-s", "1", "-q", "-h", "127.0.0.1", "-p", fmt.Sprint(d.Port), "-U", "bench", "benchdb")
	initCmd.Env = env
	out, err := initCmd.CombinedOutput()
	require.NoError(t, err, string(out))
	for _, mode := range []string{"simple", "extended"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(pgbench, "-n", "-c", "100", "-j", "4", "-T", "5", "-M", mode,
				"-h", "127.0.0.1", "-p", fmt.Sprint(d.Port), "-U", "bench", "benchdb")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			m := pgbenchTPS.FindStringSubmatch(string(out))
			require.NotNil(t, m, string(out))
			require.Equal(t, "0", m[1], string(out))
			require.Contains(t, string(out), "number of clients: 100")
		})
	}
	require.LessOrEqual(t, len(pg.BackendPIDs(t, "bench")), 10, "pool_size 10 bounds the backends")
}

var users sync.Map // name → verifier: each role is created once per test binary

// user creates a SCRAM role once per test binary (tests may run with -count).
func user(t *testing.T, name, password string) string {
	if v, ok := users.Load(name); ok {
		return v.(string)
	}
	v := pg.CreateUser(t, name, password, "scram-sha-256")
	users.Store(name, v)
	return v
}
