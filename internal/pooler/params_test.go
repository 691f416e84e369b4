package pooler_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

func login(t *testing.T, d *apptest.Instance) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, d.DSN("app", "app-secret", "postgres"))
}

// startApp starts pg_doorman in front of pg with user "app" in pool
// "postgres" of poolSize, and general holding more settings.
func startApp(t *testing.T, pg *pgtest.Cluster, general string, poolSize int) *apptest.Instance {
	t.Helper()
	ver := pg.CreateUser(t, "app", "app-secret", "scram-sha-256")
	return apptest.Start(t, fmt.Sprintf(`general:
  port: {{PORT}}
%s
pools:
  postgres:
    server_host: "%s"
    server_port: %d
    users:
      - username: app
        password: '%s'
        pool_size: %d
`, general, pg.SocketDir, pg.Port, ver, poolSize))
}

// TestRoleParamsNotStaleAfterServerLoss: once pg_doorman has seen its
// server go away (a failed query), a new client is not told the old
// in_hot_standby / default_transaction_read_only (libpq would trust them
// for target_session_attrs=read-write and then hit 25006 on a server that
// came back read-only); and once the server is back read-only, new clients
// are told so.
func TestRoleParamsNotStaleAfterServerLoss(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	d := startApp(t, pg, "  query_wait_timeout: 2s", 2)
	ctx := context.Background()
	c, err := login(t, d)
	require.NoError(t, err)
	require.Equal(t, "off", c.PgConn().ParameterStatus("default_transaction_read_only"))
	require.Equal(t, "off", c.PgConn().ParameterStatus("in_hot_standby"))
	_, err = c.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	require.NoError(t, c.Close(ctx))

	pg.Exec(t, "ALTER SYSTEM SET default_transaction_read_only = on") // it comes back read-only
	pg.Stop(t)
	if c, err := login(t, d); err == nil { // may still be told the cached set
		_, err = c.Exec(ctx, "SELECT 1")
		require.Error(t, err, "the server is down")
		_ = c.Close(ctx)
	}
	c, err = login(t, d)
	require.NoError(t, err, "login works from the cached set")
	require.Empty(t, c.PgConn().ParameterStatus("default_transaction_read_only"), "role unknown: not reported")
	require.Empty(t, c.PgConn().ParameterStatus("in_hot_standby"), "role unknown: not reported")
	require.NotEmpty(t, c.PgConn().ParameterStatus("server_version"), "the rest of the set is kept")
	_ = c.Close(ctx)

	pg.Start(t)
	require.Eventually(t, func() bool {
		c, err := login(t, d)
		if err != nil {
			return false
		}
		defer c.Close(ctx)
		return c.PgConn().ParameterStatus("default_transaction_read_only") == "on"
	}, 20*time.Second, 50*time.Millisecond, "new clients are told the server is read-only now")
}

// TestParamsRefreshAfterIdleProbeRunsOneEmptyQuery: a login that refreshes
// the ParameterStatus set on a connection idle past
// server_idle_check_timeout sends one empty query, the probe's: the
// refresh does not send its own after it.
func TestParamsRefreshAfterIdleProbeRunsOneEmptyQuery(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{ExtraConf: map[string]string{"log_statement": "all"}})
	d := startApp(t, pg, "  server_idle_check_timeout: 100ms", 1)
	ctx := context.Background()
	emptyQueries := func() int {
		b, err := os.ReadFile(pg.LogFile)
		require.NoError(t, err)
		return strings.Count(string(b), "statement: ;\n")
	}
	for i := 0; i < 2; i++ {
		c, err := login(t, d)
		require.NoError(t, err)
		_, err = c.Exec(ctx, "SELECT 1")
		require.NoError(t, err)
		require.NoError(t, c.Close(ctx))
		before := emptyQueries()
		// Past the set's one-second life and the idle check timeout: the
		// next login refreshes the set on a connection the checkout probes.
		time.Sleep(1100 * time.Millisecond)
		c, err = login(t, d)
		require.NoError(t, err)
		require.Equal(t, "off", c.PgConn().ParameterStatus("in_hot_standby"))
		require.Equal(t, before+1, emptyQueries(), "round %d: one empty query for the probe and the refresh", i)
		require.NoError(t, c.Close(ctx))
	}
}
