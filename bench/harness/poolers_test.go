package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

// A SCRAM verifier as pg_authid stores it (password "bench-secret" is not
// needed to load the config).
const testVerifier = "SCRAM-SHA-256$4096:c2FsdHNhbHRzYWx0c2FsdA==$" +
	"Wj8kGIgHV3VOWrHuQ/8mDrNeUxUIdFnjC+ouDrr24Eo=:Sn14UBPVGzHSYYn9ur2+Ucd7HECLKY/D+7ZRB0pVOUI="

func TestDoormanYAMLLoads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := poolerConfig{dir: dir, pgPort: 5432, verifier: testVerifier, poolSize: 40, prepSize: 10, maxClients: 2500}
	path := filepath.Join(dir, "doorman.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doormanYAML(6432, c)), 0o600))
	cfg, _, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, 6432, cfg.General.Port)
	require.False(t, cfg.General.LogClientConnections)
	require.Equal(t, 8192, cfg.General.MaxConnections)
	sizes := map[string]int{}
	for _, p := range cfg.Pools {
		require.Equal(t, benchDB, p.ServerDatabase, p.Name)
		require.Equal(t, "transaction", p.PoolMode, p.Name)
		require.Len(t, p.Users, 1)
		require.Equal(t, testVerifier, p.Users[0].Password)
		sizes[p.Name] = p.Users[0].PoolSize
	}
	require.Equal(t, map[string]int{benchDB: 40, preparedDB: 10}, sizes)
	require.False(t, cfg.Prometheus.Enabled)
	require.Equal(t, "allow", cfg.General.TLSMode, "no TLS keys without a certificate")
	require.Empty(t, cfg.General.TLSCertificate)
	require.Equal(t, "disable", c.sslmode())
}

func TestDoormanYAMLTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certs, err := testcerts.New(dir)
	require.NoError(t, err)
	c := poolerConfig{dir: dir, pgPort: 5432, verifier: testVerifier, poolSize: 40, prepSize: 10, maxClients: 500, tls: certs.Server}
	path := filepath.Join(dir, "doorman.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doormanYAML(6432, c)), 0o600))
	cfg, _, err := config.Load(path) // loads and checks the certificate and key files
	require.NoError(t, err)
	require.Equal(t, "require", cfg.General.TLSMode)
	require.Equal(t, certs.Server.Cert, cfg.General.TLSCertificate)
	require.Equal(t, certs.Server.Key, cfg.General.TLSPrivateKey)
	require.Equal(t, "disable", cfg.General.ServerTLSMode, "plaintext to PostgreSQL, as PgBouncer")
	require.Equal(t, "require", c.sslmode())
}

func TestDoormanYAMLPrometheus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := poolerConfig{dir: dir, pgPort: 5432, verifier: testVerifier, poolSize: 40, prepSize: 40, maxClients: 500, promPort: 9199}
	path := filepath.Join(dir, "doorman.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doormanYAML(6432, c)), 0o600))
	cfg, _, err := config.Load(path)
	require.NoError(t, err)
	require.True(t, cfg.Prometheus.Enabled)
	require.Equal(t, "127.0.0.1", cfg.Prometheus.Host)
	require.Equal(t, 9199, cfg.Prometheus.Port)
	require.Len(t, cfg.Pools, 2)
}

func TestPgBouncerINI(t *testing.T) {
	t.Parallel()
	c := poolerConfig{pgPort: 5432, poolSize: 40, prepSize: 10, maxClients: 2500}
	ini := pgbouncerINI(6433, "/w/users", "/w/log", c)
	for _, want := range []string{
		"bench = host=127.0.0.1 port=5432 dbname=bench\n",
		"bench_prep = host=127.0.0.1 port=5432 dbname=bench pool_size=10\n",
		"listen_port = 6433\n", "auth_type = scram-sha-256\n", "auth_file = /w/users\n",
		"pool_mode = transaction\n", "default_pool_size = 40\n", "max_client_conn = 2500\n",
	} {
		require.Contains(t, ini, want)
	}
	require.Less(t, strings.Index(ini, "[databases]"), strings.Index(ini, "[pgbouncer]"))
	require.NotContains(t, ini, "tls")

	c.tls = testcerts.Pair{Cert: "/w/server.crt", Key: "/w/server.key"}
	ini = pgbouncerINI(6433, "/w/users", "/w/log", c)
	for _, want := range []string{
		"client_tls_sslmode = require\n", "client_tls_cert_file = /w/server.crt\n", "client_tls_key_file = /w/server.key\n",
	} {
		require.Contains(t, ini, want)
	}
	require.NotContains(t, ini, "server_tls", "plaintext to PostgreSQL (PgBouncer's default), as pg_doorman")
	require.Greater(t, strings.Index(ini, "client_tls_sslmode"), strings.Index(ini, "[pgbouncer]"))
}
