package metrics

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/pooler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newDaemon builds a daemon from config.Default() with one pool, mydb/app
// with pool_size 7, pointing at a port where nothing listens. No
// connection is opened.
func newDaemon(t *testing.T) *daemon.Daemon {
	t.Helper()
	return newDaemonWith(t, func(*config.Pool) {})
}

// newDaemonWith builds the test daemon after letting edit change the pool.
func newDaemonWith(t *testing.T, edit func(*config.Pool)) *daemon.Daemon {
	t.Helper()
	cfg := config.Default()
	cfg.Path = filepath.Join(t.TempDir(), "pg_doorman.toml")
	cfg.Pools["mydb"] = &config.Pool{
		Name: "mydb", ServerHost: "127.0.0.1", ServerPort: 1, PoolMode: "transaction",
		Users: []config.User{{Username: "app", PoolSize: 7, PoolMode: "transaction"}},
	}
	edit(cfg.Pools["mydb"])
	d, err := daemon.New(cfg, zap.NewNop(), zap.NewAtomicLevel(), daemon.Parts{})
	require.NoError(t, err)
	t.Cleanup(d.Pools.Close)
	return d
}

func lookup(t *testing.T, d *daemon.Daemon) *pooler.Pool {
	t.Helper()
	p, ok := d.Pools.Lookup("mydb", "app")
	require.True(t, ok)
	return p
}

func TestPoolFamiliesOfAnIdlePool(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	const want = `
# HELP pg_doorman_pool_size Configured maximum number of server connections of a pool (pool_size).
# TYPE pg_doorman_pool_size gauge
pg_doorman_pool_size{database="mydb",user="app"} 7
# HELP pg_doorman_pools_clients Clients of a pool by status: idle (logged in, no server), active (holding a server), waiting (queued for a server).
# TYPE pg_doorman_pools_clients gauge
pg_doorman_pools_clients{database="mydb",status="active",user="app"} 0
pg_doorman_pools_clients{database="mydb",status="idle",user="app"} 0
pg_doorman_pools_clients{database="mydb",status="waiting",user="app"} 0
# HELP pg_doorman_pools_servers Server connections of a pool by status: active (serving a client) and idle (free).
# TYPE pg_doorman_pools_servers gauge
pg_doorman_pools_servers{database="mydb",status="active",user="app"} 0
pg_doorman_pools_servers{database="mydb",status="idle",user="app"} 0
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"pg_doorman_pool_size", "pg_doorman_pools_clients", "pg_doorman_pools_servers"))
}

func TestPoolFamiliesFollowTheStats(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	m := New(d)
	st := &lookup(t, d).Stats
	st.Clients.Add(5)       // 5 logged in
	st.ClientsActive.Add(3) // 3 of them hold or wait for a server
	st.ClientsWaiting.Add(1)
	st.BytesReceived.Add(100)
	st.BytesSent.Add(2500)
	st.QueryCount.Add(4)
	st.QueryTime.Add(6000) // µs
	st.XactCount.Add(2)
	st.XactTime.Add(9000)
	st.WaitTime.Add(3000)
	st.WaitCount.Add(4)
	st.WaitTimeouts.Add(1)
	st.ConnectErrors.Add(2)

	cases := []struct {
		family string
		labels []string // label pairs besides user and database
		want   float64
	}{
		{"pg_doorman_pools_clients", []string{"status", "idle"}, 2},
		{"pg_doorman_pools_clients", []string{"status", "active"}, 2},
		{"pg_doorman_pools_clients", []string{"status", "waiting"}, 1},
		{"pg_doorman_pools_bytes", []string{"direction", "received"}, 100},
		{"pg_doorman_pools_bytes", []string{"direction", "sent"}, 2500},
		{"pg_doorman_pools_bytes_total", []string{"direction", "sent"}, 2500},
		{"pg_doorman_pools_queries_count", nil, 4},
		{"pg_doorman_pools_queries_total", nil, 4},
		{"pg_doorman_pools_queries_total_time", nil, 6},
		{"pg_doorman_pools_transactions_count", nil, 2},
		{"pg_doorman_pools_transactions_total", nil, 2},
		{"pg_doorman_pools_transactions_total_time", nil, 9},
		{"pg_doorman_pools_avg_wait_time", nil, 0.75},
		{"pg_doorman_pools_wait_seconds_total", nil, 0.003},
		{"pg_doorman_pools_waits_total", nil, 4},
		{"pg_doorman_pools_wait_timeouts_total", nil, 1},
		{"pg_doorman_server_connect_errors_total", nil, 2},
	}
	values := gather(t, m)
	for _, tc := range cases {
		t.Run(tc.family+strings.Join(tc.labels, ","), func(t *testing.T) {
			key := poolKey(tc.family, tc.labels...)
			got, ok := values[key]
			require.True(t, ok, "series %s missing", key)
			require.InDelta(t, tc.want, got, 1e-9)
		})
	}
}

// TestServerCreateFailuresCounted: a connect the pool could not make
// shows as pg_doorman_pools_server_events_total{event="create_failed"}.
func TestServerCreateFailuresCounted(t *testing.T) {
	t.Parallel()
	d := newDaemon(t) // its server is 127.0.0.1:1: connects are refused
	m := New(d)
	key := poolKey("pg_doorman_pools_server_events_total", "event", "create_failed")
	require.Contains(t, gather(t, m), key, "the series is there before the first failure")
	require.Zero(t, gather(t, m)[key])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pc, err := lookup(t, d).Acquire(ctx)
	require.Error(t, err)
	require.Nil(t, pc)
	require.GreaterOrEqual(t, gather(t, m)[key], 1.0)
	require.Zero(t, gather(t, m)[poolKey("pg_doorman_pools_server_events_total", "event", "created")])
}

func TestClientCountsNeverGoNegative(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	m := New(d)
	st := &lookup(t, d).Stats
	// A scrape between two updates of a session moving to active.
	st.ClientsActive.Add(1)
	st.ClientsWaiting.Add(2)
	values := gather(t, m)
	require.Zero(t, values[poolKey("pg_doorman_pools_clients", "status", "idle")])
	require.Zero(t, values[poolKey("pg_doorman_pools_clients", "status", "active")])
	require.Equal(t, 2.0, values[poolKey("pg_doorman_pools_clients", "status", "waiting")])
}

func TestHooksCount(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	m.ClientLogin("mydb", "app")
	m.ClientLogin("mydb", "app")
	m.LoginFailure("password")
	m.LoginFailure("a_new_reason")
	m.ServerLost("mydb", "app")
	m.Rejected("max_connections")
	m.Rejected("max_connections")
	m.AcceptFailed("fd_limit")
	m.ClientConnection(ConnPlain)
	m.ClientConnection(ConnTLS)
	m.ClientConnection(ConnTLS)
	m.ClientConnection(ConnCancel)
	m.ClientConnection("replication")
	m.TLSHandshake("")
	m.TLSHandshake("")
	m.TLSHandshake("bad_client_certificate")
	m.SCRAMAuth("SCRAM-SHA-256-PLUS")
	m.MemoryReturned(4096)
	m.MemoryReturned(1000)
	m.AdminCommandFailed("syntax")
	m.AdminCommandFailed("syntax")
	m.AdminCommandFailed("no_database")

	values := gather(t, m)
	for key, want := range map[string]float64{
		poolKey("pg_doorman_client_logins_total"):                                                2,
		seriesKey("pg_doorman_client_login_failures_total", "reason", "password"):                1,
		seriesKey("pg_doorman_client_login_failures_total", "reason", "hba"):                     0,
		seriesKey("pg_doorman_client_login_failures_total", "reason", "a_new_reason"):            1,
		poolKey("pg_doorman_server_connections_lost_total"):                                      1,
		seriesKey("pg_doorman_client_connections_rejected_total", "reason", "max_connections"):   2,
		seriesKey("pg_doorman_accept_errors_total", "reason", "fd_limit"):                        1,
		seriesKey("pg_doorman_accept_errors_total", "reason", "other"):                           0,
		seriesKey("pg_doorman_memory_returns_total"):                                             2,
		seriesKey("pg_doorman_memory_returned_bytes_total"):                                      5096,
		seriesKey("pg_doorman_connection_count", "type", "plain"):                                1,
		seriesKey("pg_doorman_connection_count", "type", "tls"):                                  2,
		seriesKey("pg_doorman_connection_count", "type", "cancel"):                               1,
		seriesKey("pg_doorman_connection_count", "type", "total"):                                5,
		seriesKey("pg_doorman_connections_total", "type", "total"):                               5,
		seriesKey("pg_doorman_tls_handshakes_total", "result", "ok"):                             2,
		seriesKey("pg_doorman_tls_handshakes_total", "result", "failed"):                         1,
		seriesKey("pg_doorman_tls_handshake_failures_total", "reason", "bad_client_certificate"): 1,
		seriesKey("pg_doorman_tls_handshake_failures_total", "reason", "timeout"):                0,
		seriesKey("pg_doorman_client_scram_auth_total", "mechanism", "SCRAM-SHA-256-PLUS"):       1,
		seriesKey("pg_doorman_admin_command_failures_total", "reason", "syntax"):                 2,
		seriesKey("pg_doorman_admin_command_failures_total", "reason", "no_database"):            1,
		seriesKey("pg_doorman_admin_command_failures_total", "reason", "not_allowed"):            0,
	} {
		got, ok := values[key]
		require.True(t, ok, "series %s missing", key)
		require.Equal(t, want, got, key)
	}
}

func TestReloadFamilies(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	m := New(d)
	path := d.Config().Path
	failures := func() float64 { return gather(t, m)[seriesKey("pg_doorman_config_reload_failures_total")] }
	reloads := func() (float64, float64) {
		v := gather(t, m)
		return v[seriesKey("pg_doorman_config_last_reload_successful")], v[seriesKey("pg_doorman_config_reloads_total")]
	}
	ok, n := reloads()
	require.Equal(t, 1.0, ok, "no reload yet counts as success")
	require.Zero(t, n)
	require.Contains(t, gather(t, m), seriesKey("pg_doorman_config_reload_failures_total"), "the failures series is there before the first failure")
	require.Zero(t, failures())

	require.NoError(t, os.WriteFile(path, []byte("[general]\nport = \"not a number\"\n"), 0o600))
	require.Error(t, d.Reload())
	ok, n = reloads()
	require.Zero(t, ok)
	require.Zero(t, n)
	require.Equal(t, 1.0, failures())

	// A failure the next good reload hides from the gauge stays counted.
	require.NoError(t, os.WriteFile(path, []byte("[general]\nhba = [\"not a network\"]\n"), 0o600))
	require.Error(t, d.Reload())
	require.Equal(t, 2.0, failures())

	good := "[pools.mydb.users.0]\nusername = \"app\"\npassword = \"md5c4ca4238a0b923820dcc509a6f75849b\"\npool_size = 9\n"
	require.NoError(t, os.WriteFile(path, []byte(good), 0o600))
	require.NoError(t, d.Reload())
	ok, n = reloads()
	require.Equal(t, 1.0, ok)
	require.Equal(t, 1.0, n)
	require.Equal(t, 2.0, failures(), "a successful reload does not reset the failures")
	require.Equal(t, 9.0, gather(t, m)[poolKey("pg_doorman_pool_size")], "pool_size follows the reload")
}

func TestProcessFamilies(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	values := gather(t, m)
	require.Greater(t, values[seriesKey("pg_doorman_total_memory")], float64(1<<20))
	require.Contains(t, values, seriesKey("pg_doorman_client_connections"))
	require.Contains(t, values, seriesKey("pg_doorman_build_info", "version", daemon.Version))
	require.Contains(t, values, seriesKey("go_goroutines"))
	require.Contains(t, values, seriesKey("process_start_time_seconds"))
}

func TestRemovedPoolDisappears(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	m := New(d)
	require.Equal(t, 1, testutil.CollectAndCount(m.Registry(), "pg_doorman_pool_size"))
	cfg := config.Default()
	d.Pools.Apply(cfg)
	require.Zero(t, testutil.CollectAndCount(m.Registry(), "pg_doorman_pool_size"))
}

func TestRegistriesAreIndependent(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	a, b := New(d), New(d)
	a.Rejected("max_connections")
	require.Equal(t, 1.0, testutil.ToFloat64(a.rejected))
	require.Zero(t, testutil.ToFloat64(b.rejected))
}

// TestScrapeWhileSessionsCount is for -race: hooks and pool counters move
// while scrapes run.
func TestScrapeWhileSessionsCount(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	m := New(d)
	st := &lookup(t, d).Stats
	const n = 200
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			m.ClientConnection(ConnPlain)
			m.ClientLogin("mydb", "app")
			m.LoginFailure("hba")
			st.QueryCount.Add(1)
			st.ClientsActive.Add(1)
			st.ClientsActive.Add(-1)
		}
	}()
	for range 20 {
		_, err := m.Registry().Gather()
		require.NoError(t, err)
	}
	wg.Wait()
	values := gather(t, m)
	require.Equal(t, float64(n), values[seriesKey("pg_doorman_connection_count", "type", "total")])
	require.Equal(t, float64(n), values[poolKey("pg_doorman_client_logins_total")])
	require.Equal(t, float64(n), values[poolKey("pg_doorman_pools_queries_total")])
}

// TestStatsCountersExported: counters the daemon and auth_query keep as
// atomics reach their families at scrape time: clients a binary upgrade
// closed at shutdown_timeout, and executor connects that failed while
// auth_query warmed its connections.
func TestStatsCountersExported(t *testing.T) {
	t.Parallel()
	d := newDaemonWith(t, func(p *config.Pool) {
		p.AuthQuery = &config.AuthQuery{Query: "SELECT passwd FROM pg_shadow WHERE usename = $1", User: "lookup",
			Database: p.Name, Workers: 1, PoolSize: 1, CacheTTL: time.Hour}
	})
	m := New(d)
	forceClosed := seriesKey("pg_doorman_binary_upgrade_clients_total", "result", "force_closed")
	warmErrors := seriesKey("pg_doorman_auth_query_executor", "type", "warm_errors", "database", "mydb")
	values := gather(t, m)
	require.Contains(t, values, forceClosed)
	require.Contains(t, values, warmErrors)
	require.Zero(t, values[forceClosed])
	require.Zero(t, values[warmErrors])

	d.UpgradeStats.ForceClosed.Add(3)
	resolvers := d.Pools.Resolvers()
	require.Len(t, resolvers, 1)
	resolvers[0].Stats.WarmErrors.Add(2)
	values = gather(t, m)
	require.Equal(t, 3.0, values[forceClosed])
	require.Equal(t, 2.0, values[warmErrors])
}
