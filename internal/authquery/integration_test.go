package authquery_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/pooler"
)

// One PostgreSQL for the package, with the seed's SECURITY DEFINER lookup
// function and an unprivileged role allowed to call it.
var pg *pgtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, pgtest.Options{MaxConnections: 300}, func(c *pgtest.Cluster) { pg = c }))
}

var setupOnce sync.Once

func setup(t *testing.T) {
	setupOnce.Do(func() {
		pg.CreateUser(t, "doorman_auth", "lookup-secret", "scram-sha-256")
		pg.CreateUser(t, "shared_app", "shared-secret", "scram-sha-256")
		pg.CreateDatabase(t, "aqdb")
		pg.ExecDB(t, "aqdb", "GRANT ALL ON SCHEMA public TO PUBLIC")
		// The function of the seed's "Настройки auth_query", verbatim.
		pg.ExecDB(t, "aqdb", `CREATE OR REPLACE FUNCTION pg_doorman_get_auth(p_usename TEXT)
RETURNS TABLE (usename name, passwd text)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS
$$
  SELECT usename, passwd FROM pg_shadow WHERE usename = p_usename;
$$`)
		pg.ExecDB(t, "aqdb", "REVOKE ALL ON FUNCTION pg_doorman_get_auth(TEXT) FROM PUBLIC")
		pg.ExecDB(t, "aqdb", "GRANT EXECUTE ON FUNCTION pg_doorman_get_auth(TEXT) TO doorman_auth")
		// Calls of the function are counted by PostgreSQL itself.
		pg.Exec(t, "ALTER ROLE doorman_auth SET track_functions = 'all'")
	})
}

// config is a pg_doorman in front of the package's PostgreSQL whose pool
// aqdb knows its users only through auth_query; extra goes into the
// auth_query block.
func config(extraGeneral, extra string) string {
	return fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 5s
%s
pools:
  aqdb:
    server_host: 127.0.0.1
    server_port: %d
    pool_mode: transaction
    auth_query:
      query: "SELECT * FROM pg_doorman_get_auth($1)"
      user: doorman_auth
      password: lookup-secret
      workers: 2
%s
`, extraGeneral, pg.Port, extra)
}

func start(t *testing.T, extraGeneral, extra string) *apptest.Instance {
	t.Helper()
	setup(t)
	return apptest.Start(t, config(extraGeneral, extra))
}

var roleSeq struct {
	sync.Mutex
	n int
}

// newRole creates a login role with a fresh name, after pg_doorman started.
func newRole(t *testing.T, password, encryption string) string {
	t.Helper()
	roleSeq.Lock()
	roleSeq.n++
	name := fmt.Sprintf("aq_user_%d_%d", os.Getpid(), roleSeq.n)
	roleSeq.Unlock()
	pg.CreateUser(t, name, password, encryption)
	pg.ExecDB(t, "aqdb", fmt.Sprintf("GRANT CONNECT ON DATABASE aqdb TO %s", name))
	return name
}

func login(ctx context.Context, d *apptest.Instance, user, password string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, d.DSN(user, password, "aqdb"))
}

func currentUser(t *testing.T, d *apptest.Instance, user, password string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := login(ctx, d, user, password)
	require.NoError(t, err)
	defer c.Close(ctx)
	var who string
	require.NoError(t, c.QueryRow(ctx, "SELECT current_user").Scan(&who))
	return who
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// show runs an admin SHOW and returns its rows keyed by column name.
func show(t *testing.T, d *apptest.Instance, what string) []map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, d.DSN("admin", "admin-secret", "pgdoorman")+" default_query_exec_mode=simple_protocol")
	require.NoError(t, err)
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SHOW "+what)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]string
	for rows.Next() {
		vals := rows.RawValues()
		m := map[string]string{}
		for i, fd := range rows.FieldDescriptions() {
			m[fd.Name] = string(vals[i])
		}
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}

func authQueryStat(t *testing.T, d *apptest.Instance, col string) int {
	t.Helper()
	rows := show(t, d, "AUTH_QUERY")
	require.Len(t, rows, 1)
	require.Equal(t, "aqdb", rows[0]["database"])
	n, err := strconv.Atoi(rows[0][col])
	require.NoError(t, err)
	return n
}

// waitAuthQueryStat polls SHOW AUTH_QUERY until col is want, for up to 5
// s: a failed login is counted after its session has written the
// ErrorResponse, so the client that got it may ask before the count.
func waitAuthQueryStat(t *testing.T, d *apptest.Instance, col string, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := authQueryStat(t, d, col)
		if got == want || time.Now().After(deadline) {
			require.Equal(t, want, got, col)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lookups is how often PostgreSQL ran the lookup function in aqdb
// (pg_stat_user_functions, flushed by the executor's backends when idle).
func lookups(t *testing.T) int64 {
	t.Helper()
	var n int64
	err := pgxQueryInt("aqdb", `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_user_functions WHERE funcname = 'pg_doorman_get_auth'`, &n)
	require.NoError(t, err)
	return n
}

func pgxQueryInt(db, sql string, n *int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.SuperDSN(db))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	return c.QueryRow(ctx, sql).Scan(n)
}

// waitLookups polls PostgreSQL's count of lookup calls until it reaches
// want, then checks that it stays there while the stats settle.
func waitLookups(t *testing.T, want int64) {
	t.Helper()
	require.Eventually(t, func() bool { return lookups(t) >= want }, 20*time.Second, 100*time.Millisecond,
		"PostgreSQL counted fewer than %d lookup calls", want)
	require.Equal(t, want, lookups(t))
}

func findPool(d *apptest.Instance, user string) (*pooler.Pool, bool) {
	for _, p := range d.Daemon.Pools.Pools() {
		if p.Database == "aqdb" && p.User == user {
			return p, true
		}
	}
	return nil, false
}
