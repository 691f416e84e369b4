//go:build linux

package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// The pools of the test's pg_doorman; every family with a database or pool
// label has series for at least one of them.
const (
	benchDB    = "benchdb" // pgbench, max_db_connections (coordinator families)
	authDB     = "aqdb"    // auth_query (auth_query families, a dynamic pool)
	fallbackDB = "fbdb"    // patroni_api_urls, local server down (fallback families)
)

// prepareCluster creates the roles, databases and the auth_query lookup
// function (the seed's SECURITY DEFINER function over pg_shadow).
func prepareCluster(t *testing.T) (benchVerifier string) {
	t.Helper()
	benchVerifier = pg.CreateUser(t, "bench", "bench-secret", "scram-sha-256")
	pg.CreateDatabase(t, benchDB)
	pg.ExecDB(t, benchDB, "GRANT ALL ON SCHEMA public TO bench")
	pg.CreateUser(t, "doorman_auth", "lookup-secret", "scram-sha-256")
	pg.CreateUser(t, "aq_app", "aq-secret", "scram-sha-256")
	pg.CreateDatabase(t, authDB)
	pg.ExecDB(t, authDB, `CREATE FUNCTION pg_doorman_get_auth(p_usename TEXT)
RETURNS TABLE (usename name, passwd text)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS
$$ SELECT usename, passwd FROM pg_shadow WHERE usename = p_usename; $$`)
	pg.ExecDB(t, authDB, "REVOKE ALL ON FUNCTION pg_doorman_get_auth(TEXT) FROM PUBLIC")
	pg.ExecDB(t, authDB, "GRANT EXECUTE ON FUNCTION pg_doorman_get_auth(TEXT) TO doorman_auth")
	// Registered first, so it runs after the test's pg_doorman has
	// stopped: the next run (-count) creates them again.
	t.Cleanup(func() {
		for _, db := range []string{benchDB, authDB} {
			pg.Exec(t, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		}
		for _, role := range []string{"bench", "doorman_auth", "aq_app"} {
			pg.Exec(t, "DROP ROLE IF EXISTS "+role)
		}
	})
	return benchVerifier
}

// fakePatroni serves GET /cluster naming the local member (down, at
// localPort) as leader and the test's PostgreSQL as a streaming replica.
// The fallback round rejects the leader (connect_error), which gives
// pg_doorman_fallback_candidate_failures_total its series.
func fakePatroni(t *testing.T, localPort int) string {
	t.Helper()
	cluster := map[string]any{"members": []map[string]any{
		{"name": "node1", "role": "leader", "state": "running", "host": "127.0.0.1", "port": localPort, "timeline": 1},
		{"name": "node2", "role": "replica", "state": "streaming", "host": "127.0.0.1", "port": pg.Port, "timeline": 1, "lag": 0},
	}}
	body, err := json.Marshal(cluster)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cluster" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// startDoorman starts pg_doorman with prometheus on metricsPort and the
// three pools.
func startDoorman(t *testing.T, metricsPort int, benchVerifier, patroniURL string, downPort int) *apptest.Instance {
	t.Helper()
	return apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 10s
  # Twice as many parallel connects as pgbench has clients: the cold start
  # does not wait at the burst gate (it would trip the burst gate
  # expression for a moment, which the alert's for: 15m absorbs in
  # production). Not just as many: a client whose connect outlasts 100 ms
  # takes a returned connection instead and leaves its connect running
  # (hedged), so on a loaded machine a fourth client could find four
  # connects in flight.
  scaling_max_parallel_creates: 8
prometheus:
  enabled: true
  host: 127.0.0.1
  port: %[1]d
pools:
  %[2]s:
    server_host: 127.0.0.1
    server_port: %[3]d
    pool_mode: transaction
    max_db_connections: 20
    reserve_pool_size: 2
    users:
      - username: bench
        password: '%[4]s'
        pool_size: 8
  %[5]s:
    server_host: 127.0.0.1
    server_port: %[3]d
    pool_mode: transaction
    auth_query:
      query: "SELECT * FROM pg_doorman_get_auth($1)"
      user: doorman_auth
      password: lookup-secret
      workers: 1
  %[6]s:
    server_host: 127.0.0.1
    server_port: %[7]d
    server_database: %[2]s
    pool_mode: transaction
    patroni_api_urls: ["%[8]s"]
    patroni_api_timeout: 2s
    fallback_connect_timeout: 2s
    fallback_cooldown: 5m
    users:
      - username: bench
        password: '%[4]s'
        pool_size: 2
`, metricsPort, benchDB, pg.Port, benchVerifier, authDB, fallbackDB, downPort, patroniURL))
}

// pgbench runs pgbench through pg_doorman with the bench user.
func pgbench(t *testing.T, d *apptest.Instance, args ...string) {
	t.Helper()
	bin, err := pgtest.FindBinary("pgbench")
	if err != nil {
		t.Fatalf("pgbench not found: install postgresql-client-15 (scripts/deps.sh): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append([]string{"-h", "127.0.0.1", "-p", fmt.Sprint(d.Port), "-U", "bench"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, benchDB)...)
	cmd.Env = append(os.Environ(), "PGPASSWORD=bench-secret", "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pgbench %v:\n%s", args, out)
	t.Logf("pgbench %v:\n%s", args, out)
}

// exercise logs in where the families need traffic: two auth_query logins
// (a cache miss, then a hit, one dynamic pool), a refused password, and a
// two server connections of the fallback pool (the local server is down:
// they go to the member the fake Patroni names).
func exercise(t *testing.T, d *apptest.Instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run := func(dsn, sql string) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, sql)
		return err
	}
	for range 2 {
		require.NoError(t, run(d.DSN("aq_app", "aq-secret", authDB), "SELECT 1"), "auth_query login")
	}
	require.Error(t, run(d.DSN("bench", "wrong", benchDB), "SELECT 1"), "a wrong password is refused")
	// Two server connections of the fallback pool: the first asks Patroni,
	// the second reuses the cached host during the cooldown.
	c, err := pgx.Connect(ctx, d.DSN("bench", "bench-secret", fallbackDB))
	require.NoError(t, err)
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT 1")
	require.NoError(t, err, "query through the Patroni fallback")
	require.NoError(t, run(d.DSN("bench", "bench-secret", fallbackDB), "SELECT 1"), "a second server connection, to the cached host")
	require.NoError(t, tx.Commit(ctx))
}
