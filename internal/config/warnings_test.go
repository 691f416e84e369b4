package config

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "reserve pool timeout longer than query wait timeout",
			doc: `
general: {query_wait_timeout: 2000}
pools:
  db:
    max_db_connections: 10
    reserve_pool_timeout: 3s
    users: [{username: u, password: ` + md5Verifier + `}]
`,
			want: []string{"pools.db.reserve_pool_timeout: 3s is longer than general.query_wait_timeout 2s"},
		},
		{
			name: "no warning without max_db_connections",
			doc: `
general: {query_wait_timeout: 2000}
pools:
  db:
    reserve_pool_timeout: 3s
    users: [{username: u, password: ` + md5Verifier + `}]
`,
		},
		{
			name: "empty password and no users",
			doc: `
pools:
  db:
    users: [{username: u}, {username: p, password: ` + md5Verifier + `}]
  empty: {}
`,
			want: []string{
				"pools.db.users[0].password: empty, only clients matched by a pg_hba trust rule can log in",
				"pools.empty: no users and no auth_query, nobody can connect",
			},
		},
		{
			name: "log level filters",
			doc: `
general: {log_level: "warn,pg_doorman::pool=debug"}
pools: {db: {users: [{username: u, password: ` + md5Verifier + `}]}}
`,
			want: []string{`general.log_level: per-module filters "pg_doorman::pool=debug" are ignored, the global level warn applies`},
		},
		{
			name: "runtime knobs at their defaults say nothing",
			doc: `
general: {worker_threads: 4, worker_cpu_affinity_pinning: false, backlog: 0}
pools: {db: {users: [{username: u, password: ` + md5Verifier + `}]}}
`,
		},
		{
			name: "runtime knobs set: one warning for all; backlog has its effect (internal/daemon)",
			doc: `
general: {worker_threads: 8, worker_stack_size: 8MB, max_blocking_threads: 16, backlog: 64}
pools: {db: {users: [{username: u, password: ` + md5Verifier + `}]}}
`,
			want: []string{
				"general.worker_threads, general.worker_stack_size, general.max_blocking_threads: Tokio runtime settings, no effect in pg_doorman",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"c.yaml": tt.doc})
			cfg, warnings, err := Load(filepath.Join(dir, "c.yaml"))
			require.NoError(t, err)
			require.NotNil(t, cfg)
			require.Len(t, warnings, len(tt.want), "%q", warnings)
			for i, w := range tt.want {
				require.Contains(t, warnings[i], w)
			}
		})
	}
}

func TestWarningsReturnedWithErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{"c.yaml": "general: {port: 0}\npools: {db: {}}\n"})
	cfg, warnings, err := Load(filepath.Join(dir, "c.yaml"))
	require.ErrorContains(t, err, "general.port")
	require.Nil(t, cfg)
	require.Equal(t, []string{"pools.db: no users and no auth_query, nobody can connect"}, warnings)
}

// TestAuthQueryWarnings: an auth_query without $1 loads, with a warning.
func TestAuthQueryWarnings(t *testing.T) {
	dir := writeFiles(t, map[string]string{"c.yaml": `
pools:
  db:
    auth_query: {query: "SELECT passwd FROM pg_shadow", user: a}
`})
	_, warnings, err := Load(filepath.Join(dir, "c.yaml"))
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "pools.db.auth_query.query: has no $1 placeholder")
}
