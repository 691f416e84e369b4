package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
	"github.com/doorman-go/doorman/internal/servertls"
)

// TestServerTLSFilesReadAtLoad: the server_tls_* files are parsed by Load,
// so pg_doorman -t (and a reload) catches a bad path, a file that is not
// PEM or a key that does not belong to the certificate.
func TestServerTLSFilesReadAtLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set, err := testcerts.New(dir)
	require.NoError(t, err)
	client, err := set.CA.Issue("u")
	require.NoError(t, err)
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("-----BEGIN NOTHING-----\n"), 0o644))
	const user = `{username: u, password: ` + md5Verifier + `}`
	tests := []struct {
		name    string
		general string
		errs    []string // "" = loads
		mode    servertls.Mode
	}{
		{name: "default allow", mode: servertls.Allow},
		{name: "verify-full with mTLS", general: `server_tls_mode: verify-full, server_tls_ca_cert: ` + set.CA.Cert +
			`, server_tls_certificate: ` + client.Cert + `, server_tls_private_key: ` + client.Key, mode: servertls.VerifyFull},
		{name: "prefer", general: `server_tls_mode: prefer`, mode: servertls.Prefer},
		{name: "ca missing", general: `server_tls_mode: verify-ca, server_tls_ca_cert: ` + filepath.Join(dir, "none.pem"),
			errs: []string{"general.server_tls_ca_cert: open " + filepath.Join(dir, "none.pem") + ": no such file or directory"}},
		{name: "ca not pem", general: `server_tls_mode: require, server_tls_ca_cert: ` + garbage,
			errs: []string{"general.server_tls_ca_cert: " + garbage + ": no PEM certificate found"}},
		{name: "key of another certificate", general: `server_tls_certificate: ` + client.Cert + `, server_tls_private_key: ` + set.Server.Key,
			errs: []string{"general.server_tls_certificate: tls: private key does not match public key"}},
		{name: "verify-full without ca reported once", general: `server_tls_mode: verify-full`,
			errs: []string{"general.server_tls_ca_cert: required when server_tls_mode is verify-full"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := "general: {" + tt.general + "}\npools: {db: {users: [" + user + "]}}\n"
			d := writeFiles(t, map[string]string{"c.yaml": doc})
			cfg, _, err := Load(filepath.Join(d, "c.yaml"))
			if len(tt.errs) == 0 {
				require.NoError(t, err)
				require.NotNil(t, cfg.General.ServerTLS)
				require.Equal(t, tt.mode, cfg.General.ServerTLS.Mode)
				return
			}
			require.Error(t, err)
			for _, e := range tt.errs {
				require.ErrorContains(t, err, e)
			}
			require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), len(tt.errs), "%v", err)
		})
	}
}
