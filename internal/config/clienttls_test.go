package config

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

// TestClientTLSKeys: client TLS keys load when they take effect and their
// files are sound; a key without effect or a bad file names its key.
func TestClientTLSKeys(t *testing.T) {
	set, err := testcerts.New(t.TempDir())
	require.NoError(t, err)
	notPEM := filepath.Join(set.Dir, "empty.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("nothing\n"), 0o600))
	pair := fmt.Sprintf("tls_certificate: %q, tls_private_key: %q", set.Server.Cert, set.Server.Key)
	tests := []struct {
		name    string
		general string
		errKey  string // "" = loads
		errSub  string
	}{
		{name: "disable", general: `tls_mode: disable`},
		{name: "allow without certificate", general: `tls_mode: allow`},
		{name: "allow", general: `tls_mode: allow, ` + pair},
		{name: "require", general: `tls_mode: require, tls_rate_limit_per_second: 50, ` + pair},
		{name: "require with CA", general: fmt.Sprintf(`tls_mode: require, tls_ca_cert: %q, `, set.CA.Cert) + pair},
		{name: "verify-full", general: fmt.Sprintf(`tls_mode: verify-full, tls_ca_cert: %q, `, set.CA.Cert) + pair},
		{name: "disable with certificate", general: `tls_mode: disable, ` + pair, errKey: "general.tls_certificate", errSub: "no effect"},
		{name: "disable with rate limit", general: `tls_mode: disable, tls_rate_limit_per_second: 5`, errKey: "general.tls_rate_limit_per_second", errSub: "no effect"},
		{name: "CA without certificate", general: fmt.Sprintf(`tls_ca_cert: %q`, set.CA.Cert), errKey: "general.tls_ca_cert", errSub: "no effect without tls_certificate"},
		{name: "rate limit without certificate", general: `tls_rate_limit_per_second: 5`, errKey: "general.tls_rate_limit_per_second", errSub: "no effect without tls_certificate"},
		{name: "key of another certificate", general: fmt.Sprintf(`tls_mode: require, tls_certificate: %q, tls_private_key: %q`, set.Server.Cert, set.CA.Key),
			errKey: "general.tls_certificate", errSub: "private key does not match"},
		{name: "missing certificate file", general: fmt.Sprintf(`tls_certificate: %q, tls_private_key: %q`, filepath.Join(set.Dir, "gone.crt"), set.Server.Key),
			errKey: "general.tls_certificate", errSub: "gone.crt"},
		{name: "CA without PEM", general: fmt.Sprintf(`tls_mode: verify-full, tls_ca_cert: %q, `, notPEM) + pair, errKey: "general.tls_ca_cert", errSub: "no PEM certificate"},
		{name: "verify-full without CA", general: `tls_mode: verify-full, ` + pair, errKey: "general.tls_ca_cert", errSub: "required when tls_mode is verify-full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "general: {" + tt.general + "}\npools: {db: {users: [{username: u, password: " + md5Verifier + "}]}}\n"
			dir := writeFiles(t, map[string]string{"c.yaml": doc})
			cfg, _, err := Load(filepath.Join(dir, "c.yaml"))
			if tt.errKey == "" {
				require.NoError(t, err)
				require.NotNil(t, cfg)
				return
			}
			require.ErrorContains(t, err, tt.errKey+": ")
			require.ErrorContains(t, err, tt.errSub)
			require.NotErrorIs(t, err, ErrNotImplemented)
		})
	}
}
