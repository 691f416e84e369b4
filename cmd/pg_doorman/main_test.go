package main

import (
	"os"
	"os/exec"
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

// TestCheckRefusesUnimplemented: -t exits 1 and names the key of a
// setting whose behaviour is missing or whose file does not load; the
// defaults pass.
func TestCheckRefusesUnimplemented(t *testing.T) {
	bin, err := buildBinary()
	require.NoError(t, err)
	dir := t.TempDir()
	tests := []struct {
		name, general string
		want          int
		out           string
	}{
		{"defaults", "port: 6432", 0, "is valid"},
		{"tls_mode require with missing files", "tls_mode: require\n  tls_certificate: c.pem\n  tls_private_key: k.pem", 1, "general.tls_certificate: load c.pem and k.pem: open c.pem"},
		{"server_tls_mode require", "server_tls_mode: require", 0, "is valid"},
		{"server_tls_ca_cert missing", "server_tls_mode: verify-full\n  server_tls_ca_cert: /nonexistent/ca.pem", 1,
			"general.server_tls_ca_cert: open /nonexistent/ca.pem: no such file or directory"},
		{"worker_threads", "worker_threads: 16", 0, "warning: general.worker_threads: Tokio runtime settings, no effect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "c.yaml")
			require.NoError(t, os.WriteFile(path, []byte("general:\n  "+tt.general+"\npools: {db: {users: [{username: u, password: md5c4ca4238a0b923820dcc509a6f75849b}]}}\n"), 0o600))
			out, err := exec.Command(bin, "-t", path).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.want, code, "%s", out)
			require.Contains(t, string(out), tt.out)
		})
	}
}
