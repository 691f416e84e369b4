package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/auth/pam"
)

// pamRefusal is where a build without PAM refuses auth_pam_service.
var pamRefusal = map[bool]string{false: "pools.db.users[1].auth_pam_service"}[pam.Available()]

// TestUnimplementedRefused: each value whose behaviour is missing is an
// error naming its key path and wrapping ErrNotImplemented; the values our
// behaviour matches load.
func TestUnimplementedRefused(t *testing.T) {
	const user = `{username: u, password: ` + md5Verifier + `}`
	tests := []struct {
		name    string
		general string // YAML flow mapping body for general
		pool    string // extra YAML flow mapping entries for pools.db
		users   string // YAML flow list body for pools.db.users
		refused string // key path; "" = loads
	}{
		{name: "server_tls_mode disable", general: `server_tls_mode: disable`},
		{name: "server_tls_mode allow", general: `server_tls_mode: allow`},
		{name: "server_tls_mode prefer", general: `server_tls_mode: prefer`},
		{name: "server_tls_mode require", general: `server_tls_mode: require`},
		{name: "syslog_prog_name", general: `syslog_prog_name: pg_doorman`},
		{name: "proxy_copy_data_timeout default", general: `proxy_copy_data_timeout: 15000`},
		{name: "proxy_copy_data_timeout", general: `proxy_copy_data_timeout: 20000`},
		{name: "log_client_parameter_status_changes false", pool: `log_client_parameter_status_changes: false`},
		{name: "log_client_parameter_status_changes true", pool: `log_client_parameter_status_changes: true`},
		// The default build has no PAM (internal/auth/pam, build tag pam).
		{name: "auth_pam_service", users: `{username: p, auth_pam_service: login, server_username: p, server_password: x}`, refused: pamRefusal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := tt.pool
			if pool != "" {
				pool += ", "
			}
			users := user
			if tt.users != "" {
				users += ", " + tt.users
			}
			doc := "general: {" + tt.general + "}\npools: {db: {" + pool + "users: [" + users + "]}}\n"
			dir := writeFiles(t, map[string]string{"c.yaml": doc})
			cfg, _, err := Load(filepath.Join(dir, "c.yaml"))
			if tt.refused == "" {
				require.NoError(t, err)
				require.NotNil(t, cfg)
				return
			}
			require.Nil(t, cfg)
			require.ErrorIs(t, err, ErrNotImplemented)
			require.ErrorContains(t, err, tt.refused+": not implemented yet")
			// Lenient decoding proves the value itself is valid: only the
			// refusal stops it.
			_, _, err = load(filepath.Join(dir, "c.yaml"), &decoder{lenient: true})
			require.NoError(t, err)
		})
	}
}

// TestFullFilesRefused lists every key the full.decode.* files set to a
// value Load refuses; a key added to the refusals or removed from them
// changes this list.
func TestFullFilesRefused(t *testing.T) {
	tests := map[string][]string{
		"testdata/full.decode.yaml": {},
	}
	for path, want := range tests {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, _, err := Load(path)
			require.Error(t, err)
			var got, missing []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ke *KeyError
				require.ErrorAs(t, e, &ke)
				if errors.Is(e, fs.ErrNotExist) {
					missing = append(missing, ke.Key) // implemented: the files are read at load
					continue
				}
				// The client TLS files of full.decode.yaml do not exist:
				// checked at load, not refused.
				require.True(t, errors.Is(e, ErrNotImplemented) || ke.Key == "general.tls_certificate", "only refusals expected, got %v", e)
				got = append(got, ke.Key)
			}
			if pamRefusal != "" && strings.HasSuffix(path, ".yaml") {
				want = append(want, "pools.billing.users[1].auth_pam_service")
			}
			require.ElementsMatch(t, want, got, "%s", strings.Join(got, "\n"))
			if strings.HasSuffix(path, ".yaml") {
				require.ElementsMatch(t, []string{"general.server_tls_ca_cert", "general.server_tls_certificate", "general.tls_certificate",
					"general.talos.keys", "pools.billing.users[2].password"}, slices.DeleteFunc(missing, func(k string) bool {
					return pamRefusal == "" && k == "pools.billing.users[1].auth_pam_service" // PAM built in: the service file is checked
				}))
			}
		})
	}
}

// TestDocumentedDefaultsLoad: a file writing out every documented default
// loads without warnings and gives the same general section as no file.
func TestDocumentedDefaultsLoad(t *testing.T) {
	cfg, warnings := mustLoad(t, "testdata/defaults.good.yaml")
	require.Empty(t, warnings)
	want := Default().General
	want.Hba = []string{}
	require.Equal(t, want, cfg.General)
	require.Equal(t, Default().Prometheus, cfg.Prometheus)

	dir := writeFiles(t, map[string]string{"c.yaml": "pools: {db: {users: [{username: u, password: " + md5Verifier + "}]}}\n"})
	_, warnings, err := Load(filepath.Join(dir, "c.yaml"))
	require.NoError(t, err, "an empty general section with one pool loads")
	require.Empty(t, warnings)
}

func TestMaxConcurrentCreatesLowersParallelCreates(t *testing.T) {
	tests := []struct {
		name    string
		general string
		want    int
	}{
		{name: "defaults", general: ``, want: 2},
		{name: "max_concurrent_creates tighter", general: `max_concurrent_creates: 1`, want: 1},
		{name: "max_concurrent_creates looser", general: `max_concurrent_creates: 64`, want: 2},
		{name: "scaling raised above the default max_concurrent_creates", general: `scaling_max_parallel_creates: 8`, want: 4},
		{name: "both raised", general: `scaling_max_parallel_creates: 8, max_concurrent_creates: 16`, want: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "general: {" + tt.general + "}\npools: {db: {users: [{username: u, password: " + md5Verifier + "}]}}\n"
			dir := writeFiles(t, map[string]string{"c.yaml": doc})
			cfg, _ := mustLoad(t, filepath.Join(dir, "c.yaml"))
			require.Equal(t, tt.want, cfg.General.ScalingMaxParallelCreates)
		})
	}
}
