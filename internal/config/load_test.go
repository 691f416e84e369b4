package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const md5Verifier = "md5c4ca4238a0b923820dcc509a6f75849b"

// writeFiles creates files (name -> content) in a temporary directory and
// returns its path.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	return dir
}

func mustLoad(t *testing.T, path string) (*Config, []string) {
	t.Helper()
	cfg, warnings, err := Load(path)
	require.NoError(t, err)
	return cfg, warnings
}

// mustDecode loads path without refusing unimplemented keys: the
// testdata/full.decode.* files set every documented key, most of them to
// values Load refuses (TestFullFilesRefused), to check they still decode.
func mustDecode(t *testing.T, path string) (*Config, []string) {
	t.Helper()
	cfg, warnings, err := load(path, &decoder{lenient: true})
	require.NoError(t, err)
	return cfg, warnings
}

func TestDefaults(t *testing.T) {
	g := Default().General
	require.Equal(t, "0.0.0.0", g.Host)
	require.Equal(t, 5432, g.Port)
	require.Equal(t, "/tmp", g.UnixSocketDir)
	require.Equal(t, 0, g.Backlog)
	require.Equal(t, 8192, g.MaxConnections)
	require.Equal(t, 4, g.MaxConcurrentCreates)
	require.Equal(t, "allow", g.TLSMode)
	require.Equal(t, 0, g.TLSRateLimitPerSecond)
	require.Equal(t, "/tmp/pg_doorman.pid", g.DaemonPIDFile)
	require.Empty(t, g.SyslogProgName)
	require.True(t, g.LogClientConnections)
	require.True(t, g.LogClientDisconnections)
	require.Equal(t, "info", g.LogLevel)
	require.Equal(t, 4, g.WorkerThreads)
	require.False(t, g.WorkerCPUAffinityPinning)
	require.Equal(t, 3*time.Second, g.ConnectTimeout)
	require.Equal(t, 5*time.Second, g.QueryWaitTimeout)
	require.Equal(t, 10*time.Minute, g.IdleTimeout)
	require.Equal(t, 20*time.Minute, g.ServerLifetime)
	require.Equal(t, 30*time.Second, g.RetainConnectionsTime)
	require.Equal(t, 3, g.RetainConnectionsMax)
	require.Equal(t, 60*time.Second, g.ServerIdleCheckTimeout)
	require.False(t, g.ServerRoundRobin)
	require.False(t, g.SyncServerParameters)
	require.Equal(t, 0, g.TCPSoLinger)
	require.True(t, g.TCPNoDelay)
	require.Equal(t, 5, g.TCPKeepalivesCount)
	require.Equal(t, 5*time.Second, g.TCPKeepalivesIdle)
	require.Equal(t, 5*time.Second, g.TCPKeepalivesInterval)
	require.Equal(t, 60*time.Second, g.TCPUserTimeout)
	require.Equal(t, ByteSize(1048576), g.UnixSocketBufferSize)
	require.Equal(t, "admin", g.AdminUsername)
	require.Equal(t, "admin", g.AdminPassword)
	require.True(t, g.PreparedStatements)
	require.Equal(t, 8192, g.PreparedStatementsCacheSize)
	require.Equal(t, 1024, g.ClientPreparedStatementsCacheSize)
	require.Equal(t, ByteSize(1048576), g.MessageSizeToBeStream)
	require.Equal(t, 20, g.ScalingWarmPoolRatio)
	require.Equal(t, 10, g.ScalingFastRetries)
	require.Equal(t, 2, g.ScalingMaxParallelCreates)
	require.Equal(t, ByteSize(268435456), g.MaxMemoryUsage)
	require.Equal(t, 10*time.Second, g.ShutdownTimeout)
	require.Equal(t, 15*time.Second, g.ProxyCopyDataTimeout)
	require.Equal(t, 60*time.Second, g.ClientLoginTimeout, "PgBouncer's client_login_timeout default")
	require.Equal(t, "allow", g.ServerTLSMode)
	require.Empty(t, g.Hba)
	require.False(t, g.PgHba.Set())
	require.Equal(t, ";", g.PoolerCheckQuery)
	require.Empty(t, g.PatroniAPIURLs)
	require.Equal(t, 30*time.Second, g.FallbackCooldown)
	require.Equal(t, 5*time.Second, g.PatroniAPITimeout)
	require.Equal(t, 5*time.Second, g.FallbackConnectTimeout)
	require.Equal(t, 30*time.Second, g.FallbackLifetime)
	require.Equal(t, Prometheus{Enabled: false, Host: "0.0.0.0", Port: 9127}, Default().Prometheus)
	require.Empty(t, Default().Pools)
}

func TestPoolAndUserDefaults(t *testing.T) {
	dir := writeFiles(t, map[string]string{"c.yaml": `
pools:
  mydb:
    users:
      - username: u
        password: ` + md5Verifier + `
    auth_query:
      query: "SELECT passwd FROM pg_shadow WHERE usename = $1"
      user: auth
`})
	cfg, warnings := mustDecode(t, filepath.Join(dir, "c.yaml"))
	require.Empty(t, warnings)
	require.Equal(t, Default().General, cfg.General, "no general section means all defaults")
	p := cfg.Pools["mydb"]
	require.Equal(t, "mydb", p.Name)
	require.Equal(t, "127.0.0.1", p.ServerHost)
	require.Equal(t, 5432, p.ServerPort)
	require.Equal(t, "mydb", p.ServerDatabase)
	require.Equal(t, "transaction", p.PoolMode)
	require.True(t, p.CleanupServerConnections)
	require.False(t, p.LogClientParameterStatusChanges)
	require.Equal(t, 3*time.Second, p.ConnectTimeout)
	require.Equal(t, 10*time.Minute, p.IdleTimeout)
	require.Equal(t, 20*time.Minute, p.ServerLifetime)
	require.Equal(t, 20, p.ScalingWarmPoolRatio)
	require.Equal(t, 10, p.ScalingFastRetries)
	require.Equal(t, 0, p.MaxDBConnections)
	require.Equal(t, 30*time.Second, p.MinConnectionLifetime)
	require.Equal(t, 0, p.ReservePoolSize)
	require.Equal(t, 3*time.Second, p.ReservePoolTimeout)
	require.Equal(t, 0, p.MinGuaranteedPoolSize)
	require.Empty(t, p.PatroniAPIURLs)
	require.Equal(t, 30*time.Second, p.FallbackLifetime)
	require.Equal(t, &AuthQuery{
		Query: "SELECT passwd FROM pg_shadow WHERE usename = $1", User: "auth", Database: "mydb",
		Workers: 2, PoolSize: 40, CacheTTL: time.Hour, CacheFailureTTL: 30 * time.Second, MinInterval: time.Second,
	}, p.AuthQuery)
	require.Equal(t, []User{{
		Username: "u", Password: md5Verifier, PoolSize: 40, ServerLifetime: 20 * time.Minute, PoolMode: "transaction",
	}}, p.Users)
	require.Same(t, &p.Users[0], p.User("u"))
	require.Nil(t, p.User("U"))
}

func TestFullYAML(t *testing.T) {
	cfg, warnings := mustDecode(t, "testdata/full.decode.yaml")
	require.Len(t, warnings, 1, "%q", warnings)
	require.Contains(t, warnings[0], "general.worker_threads, general.worker_cpu_affinity_pinning, general.tokio_global_queue_interval, "+
		"general.tokio_event_interval, general.worker_stack_size, general.max_blocking_threads: Tokio runtime settings, no effect")
	require.Equal(t, 128, cfg.General.Backlog)
	g := cfg.General
	require.Equal(t, "127.0.0.1", g.Host)
	require.Equal(t, 6433, g.Port)
	require.Equal(t, "/var/run/pg_doorman", g.UnixSocketDir)
	require.Equal(t, "require", g.TLSMode)
	require.Equal(t, "debug", g.LogLevel)
	require.Equal(t, 61, g.TokioGlobalQueueInterval)
	require.Equal(t, ByteSize(8<<20), g.WorkerStackSize)
	require.Equal(t, 16, g.MaxBlockingThreads)
	require.Equal(t, 3*time.Second, g.ConnectTimeout)
	require.Equal(t, 7*time.Second, g.QueryWaitTimeout)
	require.Equal(t, time.Hour, g.ServerLifetime)
	require.Equal(t, 24*time.Hour, g.RetainConnectionsTime)
	require.Equal(t, 0, g.RetainConnectionsMax)
	require.Equal(t, 100*time.Millisecond, g.ServerIdleCheckTimeout)
	require.Equal(t, 30*time.Second, g.TCPKeepalivesIdle)
	require.Equal(t, 10*time.Second, g.TCPKeepalivesInterval)
	require.Equal(t, time.Duration(0), g.TCPUserTimeout)
	require.Equal(t, ByteSize(2<<20), g.UnixSocketBufferSize)
	require.Equal(t, ByteSize(64<<10), g.MessageSizeToBeStream)
	require.Equal(t, ByteSize(1<<30), g.MaxMemoryUsage)
	require.Equal(t, 20*time.Second, g.ProxyCopyDataTimeout)
	require.Equal(t, 15*time.Second, g.ClientLoginTimeout)
	require.Equal(t, PgHba{Content: "host all all 127.0.0.1/32 trust", Key: "general.pg_hba"}, g.PgHba)
	require.Equal(t, Talos{Keys: []string{"/etc/talos/abc123.pem"}, Databases: []string{"billing"}}, g.Talos)
	require.Equal(t, 20*time.Second, g.FallbackLifetime, "fallback_lifetime defaults to fallback_cooldown")
	require.Equal(t, Prometheus{Enabled: true, Host: "127.0.0.1", Port: 9500}, cfg.Prometheus)

	b := cfg.Pools["billing"]
	require.Equal(t, "billing_prod", b.ServerDatabase)
	require.Equal(t, 1500*time.Millisecond, b.ConnectTimeout)
	require.Equal(t, "session", b.PoolMode)
	require.Equal(t, 90, b.ScalingWarmPoolRatio)
	require.Equal(t, []string{"http://10.0.0.1:8008", "http://10.0.0.2:8008"}, b.PatroniAPIURLs)
	require.Equal(t, 20*time.Second, b.FallbackCooldown, "inherited from general")
	require.Equal(t, 15*time.Second, b.FallbackLifetime)
	require.Equal(t, "postgres", b.AuthQuery.Database)
	require.Equal(t, 30*time.Minute, b.AuthQuery.CacheTTL)
	require.Len(t, b.Users, 3)
	owner := b.User("owner")
	require.Equal(t, 2*time.Minute, owner.ServerLifetime)
	require.Equal(t, "transaction", owner.PoolMode, "user override of the pool's session mode")
	require.Equal(t, 5, owner.MinPoolSize)
	pam := b.User("pam_user")
	require.Equal(t, 30*time.Minute, pam.ServerLifetime, "inherited from the pool")
	require.Equal(t, "session", pam.PoolMode, "inherited from the pool")

	in := cfg.Pools["inherits"]
	require.Equal(t, 3*time.Second, in.ConnectTimeout)
	require.Equal(t, 10*time.Minute, in.IdleTimeout)
	require.Equal(t, time.Hour, in.ServerLifetime)
	require.Equal(t, 50, in.ScalingWarmPoolRatio)
	require.Equal(t, 3, in.ScalingFastRetries)
	require.Equal(t, []string{"http://localhost:8008"}, in.PatroniAPIURLs)
	require.Equal(t, 2*time.Second, in.PatroniAPITimeout)
	require.Equal(t, time.Second, in.FallbackConnectTimeout)
	require.Equal(t, time.Hour, in.User("app").ServerLifetime)
}

func TestFullTOML(t *testing.T) {
	cfg, warnings := mustDecode(t, "testdata/full.decode.toml")
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "pools.billing.reserve_pool_timeout")
	g := cfg.General
	require.Equal(t, 6433, g.Port)
	require.Equal(t, 7*time.Second, g.QueryWaitTimeout)
	require.Equal(t, 30*time.Second, g.TCPKeepalivesIdle)
	require.Equal(t, ByteSize(1<<30), g.MaxMemoryUsage)
	require.Contains(t, g.PgHba.Content, "host     all       all    10.0.0.0/8      md5")
	require.Empty(t, g.PgHba.Path)
	b := cfg.Pools["billing"]
	require.Equal(t, "session", b.PoolMode)
	require.Equal(t, 2, b.AuthQuery.Workers)
	require.Equal(t, "session", b.User("owner").PoolMode)
	require.Equal(t, "session", b.User("reader").PoolMode)
	require.Equal(t, time.Hour, b.User("reader").ServerLifetime)
}

func TestCaseSensitivePools(t *testing.T) {
	for _, f := range []string{"testdata/case_pools.good.yaml", "testdata/case_pools.good.toml"} {
		t.Run(filepath.Ext(f), func(t *testing.T) {
			cfg, _ := mustLoad(t, f)
			require.Len(t, cfg.Pools, 2)
			require.Equal(t, 5001, cfg.Pools["MyDb"].ServerPort)
			require.Equal(t, "MyDb", cfg.Pools["MyDb"].Name)
			require.Equal(t, "MyDb", cfg.Pools["MyDb"].ServerDatabase)
			require.NotNil(t, cfg.Pools["MyDb"].User("Alice"))
			require.Equal(t, 5002, cfg.Pools["mydb"].ServerPort)
			require.NotNil(t, cfg.Pools["mydb"].User("alice"))
			require.Nil(t, cfg.Pools["mydb"].User("Alice"))
		})
	}
}

func TestLegacyUsersTable(t *testing.T) {
	cfg, _ := mustLoad(t, "testdata/legacy_users.good.toml")
	users := cfg.Pools["exampledb"].Users
	require.Len(t, users, 2)
	require.Equal(t, "exampledb-user-2", users[0].Username, "numeric keys sort numerically")
	require.Equal(t, "exampledb-user-10", users[1].Username)
	require.Equal(t, []string{"10.0.0.0/8", "192.168.1.0/24", "::1/128"}, cfg.General.Hba)
}
