package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeRSAPublicKey(t *testing.T, path string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
}

// TestTokenAuthSettings: Talos keys and JWT public keys are read at load,
// and what they need is checked there.
func TestTokenAuthSettings(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "kid1.pem")
	writeRSAPublicKey(t, key)
	const user = `{username: u, password: ` + md5Verifier + `}`
	tests := []struct {
		name, general, users string
		wantErr              string // "" loads
	}{
		{name: "talos", general: `talos: {keys: ["` + key + `"], databases: [db]}`},
		{name: "talos without databases", general: `talos: {keys: ["` + key + `"]}`, wantErr: "general.talos.databases: must list"},
		{name: "talos databases without keys", general: `talos: {databases: [db]}`, wantErr: "general.talos.databases: has no effect"},
		{name: "talos key missing", general: `talos: {keys: ["` + key + `.nope"], databases: [db]}`, wantErr: "general.talos.keys"},
		{name: "jwt", users: `{username: j, password: "jwt-pkey-fpath:` + key + `", server_username: app, server_password: pw}`},
		{name: "jwt without server credentials", users: `{username: j, password: "jwt-pkey-fpath:` + key + `"}`, wantErr: "users[1].server_username: and server_password are required"},
		{name: "jwt key missing", users: `{username: j, password: "jwt-pkey-fpath:/nonexistent.pem", server_username: app, server_password: pw}`, wantErr: "users[1].password: load public key"},
		{name: "pam without server credentials", users: `{username: p, auth_pam_service: login}`, wantErr: "users[1].server_username: and server_password are required with auth_pam_service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users := user
			if tt.users != "" {
				users += ", " + tt.users
			}
			doc := "general: {" + tt.general + "}\npools: {db: {users: [" + users + "]}}\n"
			cfg, _, err := Load(filepath.Join(writeFiles(t, map[string]string{"c.yaml": doc}), "c.yaml"))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if strings.Contains(tt.general, "talos") {
				require.Contains(t, cfg.General.TalosKeys, "kid1")
			}
			if strings.Contains(tt.users, "jwt") {
				require.NotNil(t, cfg.Pools["db"].User("j").JWTKey)
			}
		})
	}
}
