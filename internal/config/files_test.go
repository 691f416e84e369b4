package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadGoodFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*.good.*")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 5)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, _, err := Load(f)
			require.NoError(t, err)
			require.NotEmpty(t, cfg.Pools)
			require.Equal(t, f, cfg.Path)
		})
	}
}

// badFiles maps every testdata/*.bad.* file to substrings its error must
// contain; each names the key path of the problem.
var badFiles = map[string][]string{
	"unknown_user_key.bad.yaml": {"pools.mydb.users[0].pool_sise: unknown key"},
	"unknown_keys.bad.toml": {
		"colour: unknown key", "general.prot: unknown key", "prometheus.enable: unknown key",
		"pools.mydb.server_hots: unknown key", "pools.mydb.auth_query.cache: unknown key",
	},
	"upper_general_key.bad.yaml": {"general.Host: unknown key"},
	"pool_mode.bad.toml": {
		`pools.mydb.pool_mode: must be one of transaction, session, got "statement"`,
		`pools.mydb.users[0].pool_mode: must be one of transaction, session, got "Session"`,
	},
	"server_password.bad.yaml": {
		"pools.mydb.users[0].server_password: requires server_username",
		"pools.mydb.auth_query.server_password: requires server_user",
	},
	"min_pool_size.bad.yaml": {
		"pools.mydb.users[0].min_pool_size: must be between 0 and pool_size 5, got 6",
		"pools.mydb.users[1].pool_size: must be at least 1, got 0",
	},
	"verifier.bad.yaml": {
		"pools.mydb.users[0].password: unsupported password format",
		"pools.mydb.users[1].password: invalid md5 verifier",
		"pools.mydb.users[2].password: invalid SCRAM-SHA-256 verifier",
	},
	"duplicate_user.bad.yaml": {`pools.mydb.users[1].username: duplicate username "u" (also users[0])`},
	"hba_pg_hba.bad.yaml":     {"general.pg_hba: cannot be used together with the legacy general.hba list"},
	"hba_cidr.bad.toml": {
		`general.hba[1]: invalid CIDR "not-a-cidr"`, `general.hba[2]: invalid CIDR "10.1.2.3"`,
	},
	"tls_modes.bad.yaml": {
		`general.tls_mode: must be one of allow, disable, require, verify-full, got "prefer"`,
		"general.server_tls_ca_cert: required when server_tls_mode is verify-ca",
	},
	"tls_verify_full.bad.yaml": {
		"general.tls_certificate: tls_certificate and tls_private_key must be set together",
		"general.tls_ca_cert: required when tls_mode is verify-full",
	},
	"scaling.bad.toml": {
		"general.scaling_warm_pool_ratio: must be between 0 and 100, got 101",
		"general.scaling_max_parallel_creates: must be at least 1, got 0",
		"pools.mydb.scaling_warm_pool_ratio: must be between 0 and 100, got -1",
	},
	"ports.bad.yaml": {
		"general.port: must be between 1 and 65535, got 70000",
		"prometheus.port: must be between 1 and 65535, got 0",
		"pools.mydb.server_port: must be between 1 and 65535, got -5",
	},
	"types.bad.yaml": {
		"general.port: must be an integer, got a string",
		`general.connect_timeout: invalid duration "3 parsecs"`,
		`general.max_memory_usage: invalid byte size "1TB"`,
		"general.tcp_keepalives_idle: must be an integer",
		"general.tcp_no_delay: must be true or false",
		"general.query_wait_timeout: must not be negative",
		"general.message_size_to_be_stream: must be bytes or a size string",
		"general.patroni_api_urls[1]: must be a string, got an integer",
		"pools.mydb: must be a table/mapping, got an integer",
	},
	"pg_hba_forms.bad.yaml": {
		"general.pg_hba.path: read pg_hba file:", "does-not-exist.conf",
		"pools: must be a table/mapping, got a list",
	},
	"pg_hba_both.bad.toml": {"general.pg_hba: set either path or content, not both"},
	"patroni.bad.yaml": {
		`general.patroni_api_urls[0]: must be an http:// or https:// URL with a host, got "localhost:8008"`,
		"general.fallback_cooldown: must be greater than 0",
		`pools.mydb.patroni_api_urls[0]: must be an http:// or https:// URL with a host, got "ftp://x"`,
		`general.server_login_retry_patroni: must be an http:// or https:// URL with a host, got "127.0.0.1:8008"`,
		"general.server_login_retry_patroni: needs server_login_retry",
	},
	"reserved_pool.bad.yaml": {`pools.pgdoorman: "pgdoorman" is reserved for the admin console`},
	"auth_query.bad.yaml": {
		"pools.mydb.auth_query.query: must not be empty",
		"pools.mydb.auth_query.user: must not be empty",
		"pools.mydb.auth_query.workers: must be at least 1, got 0",
		"pools.mydb.auth_query.min_pool_size: must be between 0 and pool_size 2, got 3",
		"pools.mydb.auth_query.password: is a SCRAM verifier",
	},
	"syntax.bad.yaml": {"parse testdata/syntax.bad.yaml"},
}

func TestLoadBadFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.*")
	require.NoError(t, err)
	require.Len(t, files, len(badFiles), "every bad file needs an entry in badFiles and vice versa")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := badFiles[filepath.Base(f)]
			require.True(t, ok, "no expectation for %s", f)
			cfg, _, err := Load(f)
			require.Error(t, err)
			require.Nil(t, cfg)
			for _, s := range want {
				require.Contains(t, err.Error(), s)
			}
			// Each line is one problem and starts with its key path.
			if !strings.HasPrefix(filepath.Base(f), "syntax") {
				for line := range strings.SplitSeq(err.Error(), "\n") {
					require.Regexp(t, `^[A-Za-z_]+[A-Za-z0-9_.\[\]]*: `, line)
				}
			}
		})
	}
}

func TestDuplicateProblemsReportedOnce(t *testing.T) {
	// general.fallback_cooldown = 0 is inherited by pools.mydb but must be
	// reported only once, at the place it was written.
	_, _, err := Load("testdata/patroni.bad.yaml")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "pools.mydb.fallback_cooldown")
	require.Equal(t, 1, strings.Count(err.Error(), "fallback_cooldown"))
}

func TestKeyErrorsAreJoined(t *testing.T) {
	_, _, err := Load("testdata/unknown_keys.bad.toml")
	require.Error(t, err)
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok)
	require.Len(t, joined.Unwrap(), 5)
	unknown := 0
	for _, e := range joined.Unwrap() {
		var ke *KeyError
		require.ErrorAs(t, e, &ke)
		require.ErrorIs(t, e, ErrUnknownKey)
		unknown++
	}
	require.Equal(t, 5, unknown)
	var ke *KeyError
	require.True(t, errors.As(err, &ke))
	require.Equal(t, "colour", ke.Key)
}

func TestUnsupportedExtension(t *testing.T) {
	for _, name := range []string{"pg_doorman.json", "pg_doorman", "pg_doorman.ini"} {
		_, _, err := Load(filepath.Join(t.TempDir(), name))
		require.ErrorContains(t, err, "unsupported extension")
	}
	_, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "read config")
}

// TestViperFoldsPoolNames documents why pools are not read through viper:
// it lower-cases map keys, so "MyDb" and "mydb" would collapse into one.
func TestViperFoldsPoolNames(t *testing.T) {
	for _, f := range []string{"testdata/case_pools.good.yaml", "testdata/case_pools.good.toml"} {
		doc, err := readDocument(f)
		require.NoError(t, err)
		pools, ok := asMap(doc.v.Get("pools"))
		require.True(t, ok)
		require.Len(t, pools, 1, "viper folded the two pools into one")
		raw, ok := asMap(doc.raw["pools"])
		require.True(t, ok)
		require.Len(t, raw, 2)
	}
}
