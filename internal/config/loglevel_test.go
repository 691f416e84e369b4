package config

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogLevelForms: every form the settings reference shows loads, with a
// warning when part of it cannot be honoured; unknown levels are errors.
func TestLogLevelForms(t *testing.T) {
	tests := []struct {
		level   string
		warning string
		err     string
	}{
		{level: "info"},
		{level: "DEBUG"},
		{level: "error"},
		{level: "off"},
		{level: "default"},
		{level: "trace", warning: "general.log_level: trace is logged as debug"},
		{level: "warn,pg_doorman::pool::pool_coordinator=debug", warning: "per-module filters"},
		{level: "pg_doorman=debug", warning: "applied as the global level debug"},
		{level: "loud", err: `general.log_level: unknown level "loud"`},
		{level: "info,pg_doorman=loud", err: "bad module directive"},
		{level: "", err: "general.log_level: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			doc := "general: {log_level: \"" + tt.level + "\"}\npools: {db: {users: [{username: u, password: " + md5Verifier + "}]}}\n"
			dir := writeFiles(t, map[string]string{"c.yaml": doc})
			cfg, warnings, err := Load(filepath.Join(dir, "c.yaml"))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.level, cfg.General.LogLevel)
			if tt.warning == "" {
				require.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			require.Contains(t, warnings[0], tt.warning)
		})
	}
}
