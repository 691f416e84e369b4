package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte("general:\n  port: 6432\npools: {}\n"), 0o600))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("general:\n  port: 6432\n  bogus: 1\n"), 0o600))
	tests := []struct {
		name string
		args []string
		env  string
		want int
	}{
		{"version", []string{"-V"}, "", 0},
		{"valid config", []string{"-t", good}, "", 0},
		{"unknown key", []string{"-t", bad}, "", 1},
		{"missing file", []string{"-t", filepath.Join(dir, "nope.yaml")}, "", 1},
		{"CONFIG_FILE from the environment", []string{"-t"}, good, 0},
		{"unknown flag", []string{"--bogus"}, "", 1},
		{"bad log format", []string{"-F", "xml", good}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CONFIG_FILE", tt.env)
			require.Equal(t, tt.want, run(tt.args))
		})
	}
}
