package daemon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// TestLoginStormRefreshesParamsOnce: the ParameterStatus set new clients
// get is refreshed from a server connection when it is stale; 50 logins
// arriving together with a stale set share one refresh, so the storm opens
// one server connection, not one per login.
func TestLoginStormRefreshesParamsOnce(t *testing.T) {
	setup(t)
	verifier := user(t, "storm", "storm-secret")
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
pools:
  storm:
    server_host: 127.0.0.1
    server_port: %d
    server_database: postgres
    users:
      - username: storm
        password: '%s'
        pool_size: 40
`, pg.Port, verifier))
	ctx := context.Background()
	dsn := d.DSN("storm", "storm-secret", "storm") + " default_query_exec_mode=exec"
	first, err := pgx.Connect(ctx, dsn) // teaches the pool the SCRAM key
	require.NoError(t, err)
	require.NoError(t, first.Ping(ctx))
	first.Close(ctx)
	p, ok := d.Daemon.Pools.Lookup("storm", "storm")
	require.True(t, ok)
	p.Conns().Reconnect() // no idle connection left: a refresh must connect
	p.ExpireServerParams()
	created := p.Conns().Stats().Created

	const logins = 50
	var wg sync.WaitGroup
	errs := make(chan error, logins)
	start := make(chan struct{})
	for range logins {
		wg.Go(func() {
			<-start
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			if c.PgConn().ParameterStatus("server_version") == "" {
				errs <- fmt.Errorf("no server_version reported")
			}
			c.Close(ctx)
		})
	}
	begin := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	opened := p.Conns().Stats().Created - created
	t.Logf("%d logins in %s opened %d server connection(s)", logins, time.Since(begin).Round(time.Millisecond), opened)
	require.GreaterOrEqual(t, opened, uint64(1), "the stale set was refreshed from a new connection")
	require.LessOrEqual(t, opened, uint64(2), "one refresh at a time (a second one only if the storm outlived the 1 s TTL)")
}
