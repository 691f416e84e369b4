//go:build linux && cgo && pam

package config

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPAMServiceChecked: with PAM built in, auth_pam_service must name a
// file in /etc/pam.d; PAM would otherwise fall back to /etc/pam.d/other.
func TestPAMServiceChecked(t *testing.T) {
	tests := []struct{ service, wantErr string }{
		{"login", ""},
		{"doorman-no-such-service", "no PAM service file /etc/pam.d/doorman-no-such-service"},
		{"../passwd", "is not a PAM service name"},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			doc := "pools: {db: {users: [{username: p, auth_pam_service: '" + tt.service + "', server_username: p, server_password: x}]}}\n"
			_, _, err := Load(filepath.Join(writeFiles(t, map[string]string{"c.yaml": doc}), "c.yaml"))
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
