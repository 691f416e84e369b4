package pooler

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/config"
)

// TestFallbackSettingsWiring: the fallback keys reach the pool's fallback
// dialer, from the pool or, where a pool leaves one out, from general;
// fallback_lifetime defaults to the cooldown in force. (What the dialer
// does with each is internal/fallback's tests.)
func TestFallbackSettingsWiring(t *testing.T) {
	const verifier = "md5" + "0123456789abcdef0123456789abcdef"
	doc := `general:
  port: 6432
  fallback_connect_timeout: 1300ms
  patroni_api_timeout: 800ms
pools:
  own:
    server_port: 5432
    patroni_api_urls: ["http://127.0.0.1:1"]
    fallback_cooldown: 7s
    patroni_api_timeout: 900ms
    fallback_connect_timeout: 1200ms
    fallback_lifetime: 4s
    users: [{username: u, password: ` + verifier + `}]
  inherits:
    server_port: 5432
    patroni_api_urls: ["http://127.0.0.1:1"]
    fallback_cooldown: 9s
    users: [{username: u, password: ` + verifier + `}]
`
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	cfg, _, err := config.Load(path)
	require.NoError(t, err)
	r := NewRegistry(cfg, zap.NewNop())
	defer r.Close()
	tests := []struct {
		db                         string
		cooldown, api, connect, lt time.Duration
	}{
		{"own", 7 * time.Second, 900 * time.Millisecond, 1200 * time.Millisecond, 4 * time.Second},
		{"inherits", 9 * time.Second, 800 * time.Millisecond, 1300 * time.Millisecond, 9 * time.Second},
	}
	for _, tt := range tests {
		p, ok := r.Lookup(tt.db, "u")
		require.True(t, ok, tt.db)
		fb := p.fallbackDialer(p.Settings())
		require.NotNil(t, fb, tt.db)
		o := fb.Options()
		require.Equal(t, []string{"http://127.0.0.1:1"}, o.PatroniURLs, tt.db)
		require.Equal(t, tt.cooldown, o.Cooldown, tt.db)
		require.Equal(t, tt.api, o.APITimeout, tt.db)
		require.Equal(t, tt.connect, o.ConnectTimeout, tt.db)
		require.Equal(t, tt.lt, o.Lifetime, tt.db)
	}
}
