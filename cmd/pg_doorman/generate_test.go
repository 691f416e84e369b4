package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// TestGenerateReference: every reference variant written by the command
// passes -t, in process and through the built binary.
func TestGenerateReference(t *testing.T) {
	bin, err := buildBinary()
	require.NoError(t, err)
	dir := t.TempDir()
	tests := []struct {
		name, file string
		flags      []string
	}{
		{"yaml", "ref.yaml", nil},
		{"yml russian", "ref.yml", []string{"--ru"}},
		{"toml", "ref.toml", nil},
		{"toml russian", "ref-ru.toml", []string{"--ru"}},
		{"yaml no comments", "plain.yaml", []string{"--no-comments"}},
		{"toml no comments wins over ru", "plain.toml", []string{"--no-comments", "--ru"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			require.Equal(t, 0, run(append([]string{"generate", "--reference", "--output", path}, tt.flags...)))
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
			require.Equal(t, 0, run([]string{"-t", path}))
			out, err := exec.Command(bin, "-t", path).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "is valid")
			require.NotContains(t, string(out), "warning")
		})
	}
	t.Run("stdout is YAML", func(t *testing.T) {
		out, err := exec.Command(bin, "generate", "--reference").Output()
		require.NoError(t, err)
		path := filepath.Join(dir, "stdout.yaml")
		require.NoError(t, os.WriteFile(path, out, 0o600))
		_, _, err = config.Load(path)
		require.NoError(t, err)
	})
	t.Run("help", func(t *testing.T) {
		out, err := exec.Command(bin, "generate", "--help").CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, f := range []string{"--host", "--port", "--user", "--password", "--database", "--output", "--reference", "--no-comments", "--ru"} {
			require.Contains(t, string(out), f)
		}
		out, err = exec.Command(bin, "--help").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "generate")
		require.NotContains(t, string(out), "completion")
	})
}

func TestGenerateErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"unknown extension", []string{"generate", "--reference", "--output", filepath.Join(dir, "c.json")}},
		{"positional argument", []string{"generate", "--reference", "extra"}},
		{"unknown flag", []string{"generate", "--bogus"}},
		{"no server", []string{"generate", "--host", "127.0.0.1", "--port", "1", "--user", "postgres", "--output", filepath.Join(dir, "c.yaml")}},
		{"directory missing", []string{"generate", "--reference", "--output", filepath.Join(dir, "nope", "c.yaml")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, 1, run(tt.args))
		})
	}
}

// TestGenerateFromServer: the command introspects a live server, from
// flags and from the libpq environment, and writes a file -t accepts.
func TestGenerateFromServer(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	verifier := pg.CreateUser(t, "app", "app pw", "scram-sha-256")
	pg.CreateDatabase(t, "appdb")
	dir := t.TempDir()
	check := func(t *testing.T, path string) {
		t.Helper()
		require.Equal(t, 0, run([]string{"-t", path}))
		cfg, _, err := config.Load(path)
		require.NoError(t, err)
		require.Contains(t, cfg.Pools, "appdb")
		require.Equal(t, pg.Port, cfg.Pools["appdb"].ServerPort)
		require.Equal(t, verifier, cfg.Pools["appdb"].User("app").Password)
		require.NotEqual(t, "admin", cfg.General.AdminPassword)
	}
	t.Run("flags", func(t *testing.T) {
		path := filepath.Join(dir, "flags.yaml")
		require.Equal(t, 0, run([]string{"generate", "--host", pg.Host, "--port", strconv.Itoa(pg.Port), "--user", "postgres", "--database", "appdb", "--output", path}))
		check(t, path)
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("PGHOST", pg.SocketDir)
		t.Setenv("PGPORT", strconv.Itoa(pg.Port))
		t.Setenv("PGUSER", "postgres")
		path := filepath.Join(dir, "env.toml")
		require.Equal(t, 0, run([]string{"generate", "--ru", "--output", path}))
		check(t, path)
		cfg, _, err := config.Load(path)
		require.NoError(t, err)
		require.Equal(t, pg.SocketDir, cfg.Pools["appdb"].ServerHost)
	})
}
