package daemon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// TestPatroniFallback: pg_doorman talks to its local PostgreSQL over the
// unix socket; when that server stops, a new client's query runs on the
// sync_standby that (a fake) Patroni reports, within 2 s, the fallback
// metrics show it, and the client is told in_hot_standby=on.
func TestPatroniFallback(t *testing.T) {
	local := pgtest.Start(t, pgtest.Options{})
	verifier := local.CreateUser(t, "fb", "fb-secret", "scram-sha-256")
	standby := local.AddReplica(t)
	local.WaitReplay(t, standby)
	patroni := patronitest.NewServer(t, []byte(fmt.Sprintf(`{"members": [
  {"name": "node1", "role": "leader", "state": "running", "host": "127.0.0.1", "port": %d, "api_url": "http://127.0.0.1:1/patroni", "timeline": 1},
  {"name": "node2", "role": "sync_standby", "state": "streaming", "host": "127.0.0.1", "port": %d, "api_url": "http://127.0.0.1:2/patroni", "timeline": 1, "lag": 0}
]}`, local.Port, standby.Port)))
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 10s
  server_idle_check_timeout: 0
  patroni_api_urls: ["%s"]
  fallback_connect_timeout: 2s
pools:
  postgres:
    server_host: "%s"
    server_port: %d
    users:
      - username: fb
        password: '%s'
        pool_size: 4
`, patroni.URL(), local.SocketDir, local.Port, verifier))
	ctx := context.Background()
	query := func() (bool, string, error) {
		c, err := pgx.Connect(ctx, d.DSN("fb", "fb-secret", "postgres")+" default_query_exec_mode=exec")
		if err != nil {
			return false, "", err
		}
		defer c.Close(ctx)
		var recovery bool
		err = c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery)
		return recovery, c.PgConn().ParameterStatus("in_hot_standby"), err
	}
	recovery, hs, err := query()
	require.NoError(t, err)
	require.False(t, recovery, "on the local primary first")
	require.Equal(t, "off", hs)

	local.Stop(t)
	start := time.Now()
	recovery, hs, err = query()
	took := time.Since(start)
	require.NoError(t, err)
	require.True(t, recovery, "the query ran on the sync_standby")
	require.Equal(t, "on", hs, "the client is told the truth about the server it is on")
	require.Less(t, took, 2*time.Second)
	t.Logf("fallback query took %s", took)

	got, err := testutil.GatherAndCount(d.Metrics.Registry(), "pg_doorman_fallback_connections_total")
	require.NoError(t, err)
	require.Greater(t, got, 0)
	families, err := d.Metrics.Registry().Gather()
	require.NoError(t, err)
	var active, host bool
	for _, mf := range families {
		switch mf.GetName() {
		case "pg_doorman_fallback_active":
			active = mf.GetMetric()[0].GetGauge().GetValue() == 1
		case "pg_doorman_fallback_host":
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "port" && l.GetValue() == fmt.Sprint(standby.Port) {
						host = true
					}
				}
			}
		}
	}
	require.True(t, active, "pg_doorman_fallback_active is 1")
	require.True(t, host, "pg_doorman_fallback_host names the standby")
}

// doormanOnStandby starts a primary with a SCRAM user and a streaming
// standby, and pg_doorman with pool postgres in front of the standby.
func doormanOnStandby(t *testing.T, user, password string, poolSize int) (*pgtest.Cluster, *apptest.Instance) {
	t.Helper()
	primary := pgtest.Start(t, pgtest.Options{})
	verifier := primary.CreateUser(t, user, password, "scram-sha-256")
	standby := primary.AddReplica(t)
	primary.WaitReplay(t, standby)
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
pools:
  postgres:
    server_host: 127.0.0.1
    server_port: %d
    users:
      - username: %s
        password: '%s'
        pool_size: %d
`, standby.Port, user, verifier, poolSize))
	return standby, d
}

// TestReadWriteAfterPromotion: pg_doorman in front of a standby; a client
// asking for target_session_attrs=read-write is refused; after the standby
// is promoted, the same client connects (PgBouncer would keep reporting the
// stale in_hot_standby=on and refuse it).
func TestReadWriteAfterPromotion(t *testing.T) {
	standby, d := doormanOnStandby(t, "rw", "rw-secret", 2)
	ctx := context.Background()
	dsn := d.DSN("rw", "rw-secret", "postgres") + " target_session_attrs=read-write"
	// A first plain login teaches the pool the SCRAM key (passthrough).
	c, err := pgx.Connect(ctx, d.DSN("rw", "rw-secret", "postgres"))
	require.NoError(t, err)
	c.Close(ctx)
	_, err = pgx.Connect(ctx, dsn)
	require.Error(t, err, "a standby is not read-write")

	standby.Promote(t)
	require.Eventually(t, func() bool {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return false
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "CREATE TEMP TABLE w (i int)")
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "read-write clients connect after the promotion")
}

// TestHotStandbyReportedAfterPromotion: pg_doorman in front of a standby
// whose idle server connection saw no statement since the promotion; a new
// client must still be told in_hot_standby=off within about a second, with
// no query of its own (libpq's target_session_attrs=read-write trusts that
// ParameterStatus and sends none). PostgreSQL reports the change on the old
// connection only when it next runs a statement.
func TestHotStandbyReportedAfterPromotion(t *testing.T) {
	standby, d := doormanOnStandby(t, "hs", "hs-secret", 1)
	ctx := context.Background()
	hotStandby := func() (string, error) {
		c, err := pgx.Connect(ctx, d.DSN("hs", "hs-secret", "postgres"))
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		return c.PgConn().ParameterStatus("in_hot_standby"), nil
	}
	c, err := pgx.Connect(ctx, d.DSN("hs", "hs-secret", "postgres"))
	require.NoError(t, err)
	var recovery bool
	require.NoError(t, c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery))
	require.True(t, recovery)
	require.Equal(t, "on", c.PgConn().ParameterStatus("in_hot_standby"))
	c.Close(ctx)

	standby.Promote(t)
	start := time.Now()
	var hs string
	require.Eventually(t, func() bool {
		hs, err = hotStandby()
		return err == nil && hs == "off"
	}, 5*time.Second, 50*time.Millisecond, "new clients are told in_hot_standby=off after the promotion")
	t.Logf("in_hot_standby=off reported %s after the promotion", time.Since(start).Round(time.Millisecond))
}

// TestFallbackAllCandidatesRejected: the local server is down and the only
// other member refuses: the client gets the sanitized FATAL, not a hang.
func TestFallbackAllCandidatesRejected(t *testing.T) {
	local := pgtest.Start(t, pgtest.Options{})
	verifier := local.CreateUser(t, "fbr", "fbr-secret", "scram-sha-256")
	deadPort := apptest.FreePort(t)
	patroni := patronitest.NewServer(t, []byte(fmt.Sprintf(`{"members": [
  {"name": "node2", "role": "sync_standby", "state": "streaming", "host": "127.0.0.1", "port": %d, "api_url": "http://127.0.0.1:2/patroni", "timeline": 1, "lag": 0}
]}`, deadPort)))
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 3s
  patroni_api_urls: ["%s"]
  fallback_connect_timeout: 1s
pools:
  postgres:
    server_host: "%s"
    server_port: %d
    users:
      - username: fbr
        password: '%s'
        server_username: fbr
        server_password: fbr-secret
        pool_size: 2
`, patroni.URL(), local.SocketDir, local.Port, verifier))
	local.Stop(t)
	ctx := context.Background()
	start := time.Now()
	_, err := pgx.Connect(ctx, d.DSN("fbr", "fbr-secret", "postgres"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "Unable to retrieve server parameters")
	require.Contains(t, err.Error(), "08006")
	require.Less(t, time.Since(start), 5*time.Second, "never longer than query_wait_timeout plus the login")
}
