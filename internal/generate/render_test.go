package generate

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/config"
)

func fakeSCRAM() string {
	b64 := func(n int, c byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{c}, n)) }
	return "SCRAM-SHA-256$4096:" + b64(16, 1) + "$" + b64(32, 2) + ":" + b64(32, 3)
}

// TestRenderLoads: a rendered inventory loads in every format and comment
// language, with odd database names intact, reserved names and unusable
// roles left out and named in the header.
func TestRenderLoads(t *testing.T) {
	md5 := "md5" + strings.Repeat("ab", 16)
	inv := &Inventory{
		ServerHost: "/var/run/postgresql", ServerPort: 5433, Source: "pg_authid",
		Databases: []string{"app", `my "db"`, "true", "123", "pgdoorman", "ünï", "a.b", "tab\there"},
		Roles: []Role{
			{Name: "alice", Verifier: fakeSCRAM()},
			{Name: "bob", Verifier: md5},
			{Name: "nopass"},
			{Name: "weird", Verifier: "hunter2"},
			{Name: "o'neil", Verifier: md5},
		},
	}
	plan, err := NewPlan(inv, bytes.NewReader(bytes.Repeat([]byte{7}, 18)))
	require.NoError(t, err)
	require.Len(t, plan.AdminPassword, 24)
	wantDBs := []string{"123", "a.b", "app", `my "db"`, "tab\there", "true", "ünï"}
	dir := t.TempDir()
	for _, f := range []Format{YAML, TOML} {
		for _, c := range []Comments{English, Russian, NoComments} {
			name := fmt.Sprintf("%v-%v", f, c)
			t.Run(name, func(t *testing.T) {
				var b bytes.Buffer
				require.NoError(t, Render(&b, plan, f, c))
				path := filepath.Join(dir, name+map[Format]string{YAML: ".yml", TOML: ".toml"}[f])
				require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
				cfg, warnings, err := config.Load(path)
				require.NoError(t, err, "%s", b.String())
				require.Empty(t, warnings)
				require.Equal(t, DefaultListenHost, cfg.General.Host)
				require.Equal(t, DefaultListenPort, cfg.General.Port)
				require.Equal(t, plan.AdminPassword, cfg.General.AdminPassword)
				require.Equal(t, wantDBs, slices.Sorted(maps.Keys(cfg.Pools)))
				for _, db := range wantDBs {
					p := cfg.Pools[db]
					require.Equal(t, inv.ServerHost, p.ServerHost)
					require.Equal(t, 5433, p.ServerPort)
					require.Equal(t, db, p.ServerDatabase)
					require.Len(t, p.Users, 3)
					require.Equal(t, fakeSCRAM(), p.User("alice").Password)
					require.Equal(t, md5, p.User("bob").Password)
					require.Equal(t, md5, p.User("o'neil").Password)
					require.Equal(t, config.DefaultUserPoolSize, p.User("bob").PoolSize)
				}
				out := b.String()
				switch c {
				case NoComments:
					require.NotContains(t, out, "#")
				case English:
					require.Contains(t, out, "Roles without a password, left out (they can log in only through a pg_hba trust rule): nopass")
					require.Contains(t, out, "cannot use, left out: weird")
					require.Contains(t, out, "reserved for the admin console: pgdoorman")
					require.Contains(t, out, "generated at random")
				case Russian:
					require.Contains(t, out, "Роли без пароля не включены")
				}
				require.NotContains(t, out, "hunter2", "a role's unusable password is not copied")
			})
		}
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct {
		path string
		want Format
		err  bool
	}{
		{"a.yaml", YAML, false}, {"a.YML", YAML, false}, {"/x/a.toml", TOML, false}, {"a.json", YAML, true}, {"a", YAML, true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f, err := FormatOf(tt.path)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, f)
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"tab\tnl\n", `"tab\u0009nl\u000A"`},
		{"ünï", `"ünï"`},
		{"del\x7f", `"del\u007F"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) { require.Equal(t, tt.want, quote(tt.in)) })
	}
}

func TestOptionsDSN(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		pgdb string
		want string
	}{
		{"empty: postgres database", Options{}, "", "dbname='postgres'"},
		{"PGDATABASE wins over the postgres default", Options{}, "app", ""},
		{"all", Options{Host: "/run/pg", Port: 5433, User: "u", Password: `p 'x\`, Database: "d"}, "",
			`host='/run/pg' port='5433' user='u' password='p \'x\\' dbname='d'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookupEnv = func(k string) string {
				if k == "PGDATABASE" {
					return tt.pgdb
				}
				return ""
			}
			t.Cleanup(func() { lookupEnv = os.Getenv })
			require.Equal(t, tt.want, tt.o.dsn())
		})
	}
}
