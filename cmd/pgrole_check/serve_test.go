package main

import (
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/testbuf"
)

func TestServeAndConfigCLI(t *testing.T) {
	bin := binary(t)
	p := pgtest.Start(t, pgtest.Options{})
	p.CreateUser(t, checkUser, checkPass, "scram-sha-256")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--port", strconv.Itoa(p.Port), "--user", checkUser,
		"--database", "postgres", "--cache-interval", "100ms")
	cmd.Env = []string{"PGPASSWORD=" + checkPass}
	var out testbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	code := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return code("/primary") == 200 }, 10*time.Second, 20*time.Millisecond, out.String())
	require.Equal(t, 503, code("/replica"))
	require.Equal(t, 200, code("/health"))
	require.Equal(t, 200, code("/metrics"))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), out.String())
	require.NotContains(t, out.String(), checkPass)

	tests := []struct {
		args []string
		code int
	}{
		{[]string{"haproxy-config", "--server", "a=127.0.0.1:5432"}, 0},
		{[]string{"haproxy-config", "--print-wrapper", "replica", "--binary", "/bin/pgrole_check"}, 0},
		{[]string{"haproxy-config", "--server", "nonsense"}, 2},
		{[]string{"haproxy-config", "--variant", "magic", "--server", "a=h:1"}, 2},
		{[]string{"haproxy-config", "--print-wrapper", "boss"}, 2},
	}
	for _, tt := range tests {
		c, stdout, stderr := run(t, nil, tt.args...)
		require.Equal(t, tt.code, c, "%v: %s", tt.args, stderr)
		if tt.code == 0 {
			require.NotEmpty(t, stdout)
		}
	}
}
