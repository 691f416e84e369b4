package config

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Not parallel: t.Setenv.
func TestEnvOverrides(t *testing.T) {
	dir := writeFiles(t, map[string]string{"c.toml": `
[general]
port = 6432
admin_password = "from-file"
[prometheus]
port = 9000
[pools.db]
server_port = 5432
`})
	t.Setenv("PG_DOORMAN_GENERAL_ADMIN_PASSWORD", "from-env")
	t.Setenv("PG_DOORMAN_GENERAL_CONNECT_TIMEOUT", "5s")
	t.Setenv("PG_DOORMAN_GENERAL_TCP_NO_DELAY", "false")
	t.Setenv("PG_DOORMAN_GENERAL_MAX_MEMORY_USAGE", "2GB")
	t.Setenv("PG_DOORMAN_PROMETHEUS_PORT", "9999")
	t.Setenv("PG_DOORMAN_PROMETHEUS_ENABLED", "true")
	cfg, _ := mustLoad(t, filepath.Join(dir, "c.toml"))
	require.Equal(t, 6432, cfg.General.Port)
	require.Equal(t, "from-env", cfg.General.AdminPassword)
	require.Equal(t, 5*time.Second, cfg.General.ConnectTimeout)
	require.Equal(t, 5*time.Second, cfg.Pools["db"].ConnectTimeout, "pools inherit the overridden value")
	require.False(t, cfg.General.TCPNoDelay)
	require.Equal(t, ByteSize(2<<30), cfg.General.MaxMemoryUsage)
	require.Equal(t, Prometheus{Enabled: true, Host: "0.0.0.0", Port: 9999}, cfg.Prometheus)

	t.Setenv("PG_DOORMAN_GENERAL_PORT", "sixty-four")
	_, _, err := Load(filepath.Join(dir, "c.toml"))
	require.ErrorContains(t, err, "general.port: must be an integer, got a string (in environment)")
}
