package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSettings(t *testing.T) {
	cfg, _ := mustDecode(t, "testdata/full.decode.yaml")
	got := map[string]string{}
	var keys []string
	for _, s := range cfg.Settings() {
		_, dup := got[s.Key]
		require.False(t, dup, "duplicate key %s", s.Key)
		got[s.Key] = s.Value
		keys = append(keys, s.Key)
	}
	require.Equal(t, "host", keys[0], "documented order")
	require.Equal(t, "127.0.0.1", got["host"])
	require.Equal(t, "6433", got["port"])
	require.Equal(t, Mask, got["admin_password"])
	require.Equal(t, "3000", got["connect_timeout"], "durations in milliseconds")
	require.Equal(t, "30", got["tcp_keepalives_idle"], "documented in seconds")
	require.Equal(t, "1073741824", got["max_memory_usage"])
	require.Equal(t, "http://localhost:8008", got["patroni_api_urls"])
	require.Equal(t, "billing", got["talos.databases"])
	require.Equal(t, "<inline>", got["pg_hba"])
	require.Equal(t, "true", got["prometheus.enabled"])
	require.Equal(t, "9500", got["prometheus.port"])
	require.NotContains(t, got, "pools")
}

func TestRedacted(t *testing.T) {
	cfg, _ := mustDecode(t, "testdata/full.decode.yaml")
	r := cfg.Redacted()
	require.Equal(t, Mask, r.General.AdminPassword)
	b := r.Pools["billing"]
	require.Equal(t, Mask, b.User("owner").Password)
	require.Equal(t, Mask, b.User("owner").ServerPassword)
	require.Empty(t, b.User("pam_user").Password, "empty stays empty")
	require.Equal(t, Mask, b.AuthQuery.Password)
	require.Equal(t, Mask, b.AuthQuery.ServerPassword)
	require.Equal(t, cfg.Pools["billing"].ServerHost, b.ServerHost)

	// The original is untouched and shares no mutable memory.
	require.Equal(t, "s3cret", cfg.General.AdminPassword)
	require.Equal(t, "plain", cfg.Pools["billing"].User("owner").ServerPassword)
	require.Equal(t, "auth_password", cfg.Pools["billing"].AuthQuery.Password)
	r.General.PatroniAPIURLs[0] = "changed"
	b.PatroniAPIURLs[0] = "changed"
	require.Equal(t, "http://localhost:8008", cfg.General.PatroniAPIURLs[0])
	require.Equal(t, "http://10.0.0.1:8008", cfg.Pools["billing"].PatroniAPIURLs[0])
}

func TestValidateConfigBuiltInCode(t *testing.T) {
	cfg := Default()
	p := NewPool("Db", &cfg.General)
	require.Equal(t, "Db", p.ServerDatabase)
	require.Equal(t, cfg.General.ServerLifetime, p.ServerLifetime)
	u := NewUser(p, "app")
	u.Password = "md5c4ca4238a0b923820dcc509a6f75849b"
	p.Users = append(p.Users, u)
	cfg.Pools[p.Name] = p
	warnings, err := cfg.Validate()
	require.NoError(t, err)
	require.Empty(t, warnings)

	p.Users[0].MinPoolSize = 41
	p.PoolMode = "statement"
	_, err = cfg.Validate()
	require.ErrorContains(t, err, "pools.Db.pool_mode: must be one of transaction, session")
	require.ErrorContains(t, err, "pools.Db.users[0].min_pool_size: must be between 0 and pool_size 40, got 41")
}
