package pooler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/config"
)

// TestRegistryConfigFollowsApply: Config, read without the registry's
// lock, is the configuration of the last Apply, and a pool it adds is
// found once Config shows it.
func TestRegistryConfigFollowsApply(t *testing.T) {
	const verifier = "md5" + "0123456789abcdef0123456789abcdef"
	load := func(pools string) *config.Config {
		t.Helper()
		path := filepath.Join(t.TempDir(), "c.yaml")
		doc := "general:\n  port: 6432\npools:\n" + pools
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
		cfg, _, err := config.Load(path)
		require.NoError(t, err)
		return cfg
	}
	first := load("  a:\n    server_port: 5432\n    users: [{username: u, password: " + verifier + "}]\n")
	r := NewRegistry(first, zap.NewNop())
	defer r.Close()
	require.Same(t, first, r.Config())

	second := load("  a:\n    server_port: 5432\n    users: [{username: u, password: " + verifier + "}]\n" +
		"  b:\n    server_port: 5432\n    users: [{username: u, password: " + verifier + "}]\n")
	r.Apply(second)
	require.Same(t, second, r.Config())
	_, ok := r.Lookup("b", "u")
	require.True(t, ok, "the pool the new configuration adds")
}
