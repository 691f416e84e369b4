package generate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/doorman-go/doorman/internal/config"
)

// configKeys walks the config structs by their cfg tags and returns every
// key path in catalogue form ("general.talos.keys", "pools.users.password").
func configKeys() []string {
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for _, f := range config.Fields(t) {
			path := prefix + "." + f.Key
			keys = append(keys, path)
			ft := t.Field(f.Index).Type
			switch {
			case path == "pools.auth_query":
				walk(path, reflect.TypeFor[config.AuthQuery]())
			case path == "pools.users":
				walk(path, reflect.TypeFor[config.User]())
			case ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]() && !f.Custom:
				walk(path, ft)
			}
		}
	}
	walk("general", reflect.TypeFor[config.General]())
	walk("pools", reflect.TypeFor[config.Pool]())
	walk("prometheus", reflect.TypeFor[config.Prometheus]())
	return append(keys, "include.files")
}

func TestCatalogueCoversEveryKey(t *testing.T) {
	keys := configKeys()
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
		e, ok := catalogue[k]
		require.True(t, ok, "catalogue has no entry for %s", k)
		require.NotEmpty(t, e.en, k)
		require.NotEmpty(t, e.ru, k)
	}
	for k := range catalogue {
		require.True(t, seen[k], "catalogue entry %s is not a config key", k)
	}
}

// lookup follows a catalogue path through a parsed document; pools.* and
// pools.users.* go through the example pool and its first user.
func lookup(doc map[string]any, path string) (any, bool) {
	parts := strings.Split(path, ".")
	if parts[0] == "pools" {
		parts = append([]string{"pools", exampleDB}, parts[1:]...)
	}
	var cur any = doc
	for _, p := range parts {
		if l, ok := cur.([]any); ok && len(l) > 0 {
			cur = l[0] // users[0]
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func parse(t *testing.T, f Format, b []byte) map[string]any {
	t.Helper()
	doc := map[string]any{}
	if f == TOML {
		require.NoError(t, toml.Unmarshal(b, &doc), "%s", b)
	} else {
		require.NoError(t, yaml.Unmarshal(b, &doc), "%s", b)
	}
	return doc
}

// TestReferenceHasEveryKey: with the commented-out keys written for real,
// the reference sets every key the config structs declare; as written,
// only the inherited ones are missing.
func TestReferenceHasEveryKey(t *testing.T) {
	for _, f := range []Format{YAML, TOML} {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			var all, written bytes.Buffer
			require.NoError(t, write(&all, f, "", referenceNodes(English, true)))
			require.NoError(t, Reference(&written, f, English))
			full, plain := parse(t, f, all.Bytes()), parse(t, f, written.Bytes())
			for _, k := range configKeys() {
				_, ok := lookup(full, k)
				require.True(t, ok, "activated reference lacks %s", k)
				_, ok = lookup(plain, k)
				under := strings.HasPrefix(k, "pools.auth_query.")
				require.Equal(t, !inherited[k] && !under, ok, "reference as written: %s", k)
				if !ok {
					name := regexp.QuoteMeta(k[strings.LastIndex(k, ".")+1:])
					require.Regexp(t, `(?m)^\s*#.*\b`+name+`(:| =|\])`, written.String(), "commented-out %s", k)
				}
			}
		})
	}
}

// TestReferenceLoads: every variant of the reference loads with
// config.Load to exactly the documented defaults.
func TestReferenceLoads(t *testing.T) {
	want := config.Default()
	aqWant := loadAuthQueryDefaults(t)
	dir := t.TempDir()
	for _, f := range []Format{YAML, TOML} {
		for _, c := range []Comments{English, Russian, NoComments} {
			for _, activate := range []bool{false, true} {
				name := fmt.Sprintf("%v-%v-%v", f, c, activate)
				t.Run(name, func(t *testing.T) {
					path := filepath.Join(dir, name+map[Format]string{YAML: ".yaml", TOML: ".toml"}[f])
					var b bytes.Buffer
					if activate {
						require.NoError(t, write(&b, f, "", referenceNodes(c, true)))
					} else {
						require.NoError(t, Reference(&b, f, c))
					}
					require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
					cfg, warnings, err := config.Load(path)
					require.NoError(t, err, "%s", b.String())
					require.Empty(t, warnings)
					w := *want
					if activate {
						w.General.PgHba = config.PgHba{Content: exampleHba}
					}
					require.Equal(t, w.Settings(), cfg.Settings())
					require.Equal(t, want.Prometheus, cfg.Prometheus)
					p := cfg.Pools[exampleDB]
					require.NotNil(t, p)
					wantPool := config.NewPool(exampleDB, &cfg.General)
					u := config.NewUser(wantPool, exampleUser)
					u.Password = exampleVerifier
					wantPool.Users = []config.User{u}
					if activate {
						wantPool.AuthQuery = aqWant
						wantPool.PatroniAPIURLs = []string{} // written as []
					}
					require.Equal(t, wantPool, p)
				})
			}
		}
	}
}

// loadAuthQueryDefaults loads an auth_query with only the required keys,
// so the config package's own defaults are what the reference must match.
func loadAuthQueryDefaults(t *testing.T) *config.AuthQuery {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aq.yaml")
	body := fmt.Sprintf("pools:\n  %s:\n    auth_query:\n      query: %q\n      user: doorman_auth\n", exampleDB, exampleQuery)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	cfg, _, err := config.Load(path)
	require.NoError(t, err)
	return cfg.Pools[exampleDB].AuthQuery
}
