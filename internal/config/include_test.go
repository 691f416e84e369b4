package config

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestIncludeMixedFormats(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"main.yaml": `
include:
  files: ["conf.d/pools.toml", "conf.d/more.yml"]
general:
  port: 6432
  admin_password: main
  connect_timeout: 1000
pools:
  main_db:
    users: [{username: u, password: ` + md5Verifier + `}]
`,
		"conf.d/pools.toml": `
[general]
admin_password = "from-toml"

[pools.Billing]
server_port = 5433
[[pools.Billing.users]]
username = "b"
password = "` + md5Verifier + `"
`,
		"conf.d/more.yml": `
general:
  admin_password: from-yaml
prometheus:
  enabled: true
pools:
  billing:
    users: [{username: c, password: ` + md5Verifier + `}]
`,
	})
	cfg, _ := mustLoad(t, filepath.Join(dir, "main.yaml"))
	require.Len(t, cfg.Pools, 3)
	require.Equal(t, 5433, cfg.Pools["Billing"].ServerPort)
	require.NotNil(t, cfg.Pools["billing"].User("c"))
	require.Equal(t, 6432, cfg.General.Port, "kept from the main file")
	require.Equal(t, "from-yaml", cfg.General.AdminPassword, "the last file setting a general key wins")
	require.True(t, cfg.Prometheus.Enabled)
	require.Equal(t, time.Second, cfg.Pools["Billing"].ConnectTimeout, "included pools inherit the merged general section")
}

func TestIncludeErrors(t *testing.T) {
	pool := func(name string) string {
		return "pools:\n  " + name + ":\n    users: [{username: u, password: " + md5Verifier + "}]\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "pool defined twice",
			files: map[string]string{
				"main.yaml": "include:\n  files: [a.toml]\n" + pool("mydb"),
				"a.toml":    "[pools.mydb]\n[[pools.mydb.users]]\nusername = \"x\"\npassword = \"" + md5Verifier + "\"\n",
			},
			want: []string{"pools.mydb: defined in both", "main.yaml and ", "a.toml"},
		},
		{
			name: "missing include",
			files: map[string]string{
				"main.yaml": "include:\n  files: [ok.yaml, nope.yaml]\n" + pool("mydb"),
				"ok.yaml":   pool("other"),
			},
			want: []string{"include.files[1]: read config:", "nope.yaml"},
		},
		{
			name: "nested include",
			files: map[string]string{
				"main.yaml": "include:\n  files: [a.yaml]\n" + pool("mydb"),
				"a.yaml":    "include:\n  files: [b.yaml]\n",
			},
			want: []string{"include: nested include is not supported (in ", "a.yaml)"},
		},
		{
			name: "unknown key in include names the file",
			files: map[string]string{
				"main.yaml": "include:\n  files: [a.yaml]\n" + pool("mydb"),
				"a.yaml":    "general:\n  prot: 1\n",
			},
			want: []string{"general.prot: unknown key (in ", "a.yaml)"},
		},
		{
			name: "include bad extension",
			files: map[string]string{
				"main.yaml": "include:\n  files: [a.json]\n" + pool("mydb"),
			},
			want: []string{"include.files[0]: config file", "unsupported extension"},
		},
		{
			name: "unknown include key",
			files: map[string]string{
				"main.yaml": "include:\n  file: [a.yaml]\n" + pool("mydb"),
			},
			want: []string{"include.file: unknown key"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			_, _, err := Load(filepath.Join(dir, "main.yaml"))
			require.Error(t, err)
			for _, s := range tt.want {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestPgHbaForms(t *testing.T) {
	const rules = "host all all 127.0.0.1/32 trust\n"
	tests := []struct {
		name     string
		files    map[string]string
		wantPath string // relative to the temp dir
	}{
		{name: "inline yaml", files: map[string]string{"c.yaml": "general:\n  pg_hba: |\n    host all all 127.0.0.1/32 trust\n"}},
		{name: "inline toml", files: map[string]string{"c.toml": "[general]\npg_hba = \"\"\"\nhost all all 127.0.0.1/32 trust\n\"\"\"\n"}},
		{name: "content yaml", files: map[string]string{"c.yaml": "general:\n  pg_hba:\n    content: \"host all all 127.0.0.1/32 trust\\n\"\n"}},
		{name: "content toml", files: map[string]string{"c.toml": "[general]\npg_hba = { content = \"host all all 127.0.0.1/32 trust\\n\" }\n"}},
		{
			name:     "relative path",
			files:    map[string]string{"c.yaml": "general:\n  pg_hba:\n    path: hba/pg_hba.conf\n", "hba/pg_hba.conf": rules},
			wantPath: "hba/pg_hba.conf",
		},
		{
			name:     "path toml",
			files:    map[string]string{"c.toml": "[general]\npg_hba = { path = \"./pg_hba.conf\" }\n", "pg_hba.conf": rules},
			wantPath: "pg_hba.conf",
		},
		// The seed's pg_hba page writes the rules under general.hba.
		{name: "hba inline yaml", files: map[string]string{"c.yaml": "general:\n  hba: |\n    host all all 127.0.0.1/32 trust\n"}},
		{name: "hba inline toml", files: map[string]string{"c.toml": "[general]\nhba = \"\"\"\nhost all all 127.0.0.1/32 trust\n\"\"\"\n"}},
		{name: "hba content yaml", files: map[string]string{"c.yaml": "general:\n  hba:\n    content: |\n      host all all 127.0.0.1/32 trust\n"}},
		{
			name:     "hba path yaml",
			files:    map[string]string{"c.yaml": "general:\n  hba:\n    path: \"pg_hba.conf\"\n", "pg_hba.conf": rules},
			wantPath: "pg_hba.conf",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			name := "c.yaml"
			if _, ok := tt.files["c.toml"]; ok {
				name = "c.toml"
			}
			cfg, warnings, err := Load(filepath.Join(dir, name))
			require.NoError(t, err)
			require.Equal(t, rules, cfg.General.PgHba.Content)
			if tt.wantPath != "" {
				require.Equal(t, filepath.Join(dir, tt.wantPath), cfg.General.PgHba.Path)
			} else {
				require.Empty(t, cfg.General.PgHba.Path)
			}
			require.Equal(t, []string{"pools: no pools configured, only the admin console is reachable"}, warnings)
		})
	}
}

// TestHbaList: general.hba as a list is the legacy address list; other
// shapes, and rules in both general.hba and general.pg_hba, are errors.
func TestHbaList(t *testing.T) {
	dir := writeFiles(t, map[string]string{"c.yaml": "general:\n  hba: [\"10.0.0.0/8\", \"127.0.0.1/32\"]\n"})
	cfg, _, err := Load(filepath.Join(dir, "c.yaml"))
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.0/8", "127.0.0.1/32"}, cfg.General.Hba)
	require.False(t, cfg.General.PgHba.Set())

	bad := []struct{ name, doc, want string }{
		{"a number", "general:\n  hba: 5\n", "general.hba: must be a list of addresses, or pg_hba rules"},
		{"rules twice", "general:\n  hba: \"host all all 127.0.0.1/32 trust\"\n  pg_hba: \"host all all 127.0.0.1/32 trust\"\n", "general.hba: pg_hba rules are set in general.pg_hba as well"},
		{"a list and pg_hba", "general:\n  hba: [\"127.0.0.1/32\"]\n  pg_hba: \"host all all 127.0.0.1/32 trust\"\n", "general.pg_hba"},
		{"a table without path or content", "general:\n  hba:\n    file: x\n", "general.hba.file"},
		// The rules are parsed at load, so that -t refuses what start would.
		{"rules pg_hba cannot parse, in pg_hba", "general:\n  pg_hba: \"host all all nowhere trust\"\n", "general.pg_hba: "},
		{"rules pg_hba cannot parse, in hba", "general:\n  hba: \"host all all nowhere trust\"\n", "general.hba: "},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"c.yaml": tt.doc})
			_, _, err := Load(filepath.Join(dir, "c.yaml"))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestFallbackLifetimeResolution(t *testing.T) {
	tests := []struct {
		name        string
		general     string
		pool        string
		wantGeneral time.Duration
		wantPool    time.Duration
	}{
		{"defaults", "", "", 30 * time.Second, 30 * time.Second},
		{"general cooldown", "fallback_cooldown: 10s", "", 10 * time.Second, 10 * time.Second},
		{"pool cooldown", "", "fallback_cooldown: 7s", 30 * time.Second, 7 * time.Second},
		{"explicit general lifetime wins over pool cooldown", "fallback_lifetime: 1m", "fallback_cooldown: 7s", time.Minute, time.Minute},
		{"explicit pool lifetime", "fallback_cooldown: 10s", "fallback_lifetime: 3s", 10 * time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "general:\n  port: 6432\n"
			if tt.general != "" {
				doc += "  " + tt.general + "\n"
			}
			doc += "pools:\n  db:\n    server_port: 5432\n"
			if tt.pool != "" {
				doc += "    " + tt.pool + "\n"
			}
			dir := writeFiles(t, map[string]string{"c.yaml": doc})
			cfg, _ := mustLoad(t, filepath.Join(dir, "c.yaml"))
			require.Equal(t, tt.wantGeneral, cfg.General.FallbackLifetime)
			require.Equal(t, tt.wantPool, cfg.Pools["db"].FallbackLifetime)
		})
	}
}
