package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// retryRig is a private PostgreSQL with user "rt" and pg_doorman in front
// of it with the given server_login_retry and query_wait_timeout.
type retryRig struct {
	pg *pgtest.Cluster
	d  *apptest.Instance
}

func startRetryRig(t *testing.T, retry, wait string) *retryRig {
	t.Helper()
	return startRetryRigWith(t, retry, wait, "")
}

// startRetryRigWith is startRetryRig with extra general settings (YAML
// lines indented by two spaces).
func startRetryRigWith(t *testing.T, retry, wait, general string) *retryRig {
	t.Helper()
	pg := pgtest.Start(t, pgtest.Options{})
	verifier := pg.CreateUser(t, "rt", "rt-secret", "scram-sha-256")
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: %s
  server_login_retry: %s
  server_idle_check_timeout: 0
%spools:
  postgres:
    server_host: 127.0.0.1
    server_port: %d
    pool_mode: transaction
    users:
      - username: rt
        password: '%s'
        pool_size: 4
`, wait, retry, general, pg.Port, verifier))
	return &retryRig{pg: pg, d: d}
}

// query logs in as rt and runs one statement on a fresh connection.
func (r *retryRig) query(ctx context.Context) error {
	c, err := pgx.Connect(ctx, r.d.DSN("rt", "rt-secret", "postgres")+" default_query_exec_mode=exec")
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var one int
	return c.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// servedAfter runs op (a client's statement) in the background, waits
// until waiting reports that it is held (and checks that op has not
// returned), calls release (the server comes back) and requires op to
// succeed within 20 s of that.
func servedAfter(t *testing.T, op func() error, waiting func() bool, release func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	require.Eventually(t, waiting, 20*time.Second, 10*time.Millisecond, "the client is held")
	select {
	case err := <-done:
		t.Fatalf("the client was not held: %v", err)
	default:
	}
	release()
	select {
	case err := <-done:
		require.NoError(t, err, "served once the server is back")
	case <-time.After(20 * time.Second):
		t.Fatal("the held client was not served within 20 s of the server's return")
	}
}

func (r *retryRig) retries(t *testing.T) uint64 {
	p, ok := r.d.Daemon.Pools.Lookup("postgres", "rt")
	require.True(t, ok)
	return p.Stats.ConnectRetries.Load()
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestServerLoginRetryWaitsForRestart: with server_login_retry on, a
// client whose server is down (PostgreSQL restarting in place) waits and
// is served once PostgreSQL accepts connections again, instead of getting
// 08006; pg_doorman_server_connect_retries_total counts the attempts.
func TestServerLoginRetryWaitsForRestart(t *testing.T) {
	r := startRetryRig(t, "100ms", "20s")
	ctx := context.Background()
	require.NoError(t, r.query(ctx), "served while PostgreSQL is up")

	r.pg.Stop(t)
	// The client waits while pg_doorman retries: two retries seen means
	// it is past the first refused connect and still waiting.
	servedAfter(t, func() error { return r.query(ctx) },
		func() bool { return r.retries(t) >= 2 }, func() { r.pg.Start(t) })
	require.GreaterOrEqual(t, metricValue(t, r.d, "pg_doorman_server_connect_retries_total", "database", "postgres", "user", "rt"), 2.0)
}

// TestServerLoginRetryBounds: what a client gets when retrying cannot
// help or is off, and how long it waits for it.
func TestServerLoginRetryBounds(t *testing.T) {
	downCases := []struct {
		name, retry, wait string
		minTook           time.Duration // the wait for the server
		retries           bool
	}{
		{"off: 08006 at once", "0", "20s", 0, false},
		{"server stays down: the connect error after query_wait_timeout", "100ms", "1s", 800 * time.Millisecond, true},
	}
	for _, tc := range downCases {
		t.Run(tc.name, func(t *testing.T) {
			r := startRetryRig(t, tc.retry, tc.wait)
			ctx := context.Background()
			require.NoError(t, r.query(ctx))
			r.pg.Stop(t)
			start := time.Now()
			err := r.query(ctx)
			took := time.Since(start)
			require.Error(t, err)
			require.Equal(t, "08006", sqlState(err), "the connect error, not query_wait_timeout: %v", err)
			require.GreaterOrEqual(t, took, tc.minTook)
			require.Less(t, took, 5*time.Second, "no longer than query_wait_timeout and a connect")
			require.Equal(t, tc.retries, r.retries(t) > 0, "retries: %d", r.retries(t))
		})
	}
	t.Run("refused login: no retry", func(t *testing.T) {
		r := startRetryRig(t, "100ms", "20s")
		ctx := context.Background()
		// The server no longer accepts the keys of the configured
		// verifier: a setting must change, waiting does not help.
		r.pg.Exec(t, "ALTER ROLE rt PASSWORD 'changed-in-postgres'")
		start := time.Now()
		err := r.query(ctx)
		require.Error(t, err)
		require.Equal(t, "28P01", sqlState(err), "%v", err)
		require.Less(t, time.Since(start), 5*time.Second)
		require.Zero(t, r.retries(t))
	})
}
