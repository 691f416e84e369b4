package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/proxy"
)

// echo serves one greeting line then echoes, like the proxy package's tests.
func echo(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, "hello\n")
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func talk(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err := io.WriteString(c, "ping\n")
	require.NoError(t, err)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ping\n", line)
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "hello\n", line)
	return c, r
}

const configTmpl = `cluster_update_interval: 0.2
listen_address: %q
shutdown_timeout: 1
clusters:
  Main:
    hosts: [%q]
    ports:
      master:
        listen: %q
        roles: [leader]
%s`

// TestSIGHUPAddsPort runs the command in-process and sends the process real
// SIGHUP and SIGTERM signals.
func TestSIGHUPAddsPort(t *testing.T) {
	pg, pg2 := echo(t), echo(t)
	srv := patronitest.NewServer(t, nil)
	srv.SetCluster(t, &patroni.Cluster{Members: []patroni.Member{
		{Name: "n1", Role: patroni.RoleLeader, State: patroni.StateRunning, Host: "127.0.0.1", Port: pg, LagKnown: true},
		{Name: "n2", Role: patroni.RoleReplica, State: patroni.StateStreaming, Host: "127.0.0.1", Port: pg2, LagKnown: true},
	}})
	api, master, ro := freeAddr(t), freeAddr(t), freeAddr(t)
	path := filepath.Join(t.TempDir(), "patroni_proxy.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, configTmpl, api, srv.URL(), master, ""), 0o600))

	require.Equal(t, 0, run([]string{"-t", path}, nil))
	started := make(chan *proxy.Proxy, 1)
	exit := make(chan int, 1)
	go func() { exit <- run([]string{"-l", "warn", path}, started) }()
	var p *proxy.Proxy
	select {
	case p = <-started:
	case code := <-exit:
		t.Fatalf("patroni_proxy exited with %d", code)
	}
	var c net.Conn
	var r *bufio.Reader
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", master)
		if err != nil {
			return false
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		line, _ := bufio.NewReader(conn).ReadString('\n')
		return line == "hello\n" // the first topology has arrived
	}, 10*time.Second, 10*time.Millisecond)
	c, r = dial(t, master)
	talk(t, c, r)
	require.Nil(t, p.PortAddr("Main", "ro"))

	extra := fmt.Sprintf("      ro:\n        listen: %q\n        roles: [async]\n", ro)
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, configTmpl, api, srv.URL(), master, extra), 0o600))
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	require.Eventually(t, func() bool { return p.PortAddr("Main", "ro") != nil }, 10*time.Second, 10*time.Millisecond)
	rc, rr := dial(t, ro)
	talk(t, rc, rr)
	talk(t, c, r) // the unchanged port's connection was not touched

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case code := <-exit:
		require.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		t.Fatal("patroni_proxy did not stop after SIGTERM")
	}
}

func TestBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte("clusters: {}\n"), 0o600))
	require.Equal(t, 1, run([]string{"-t", path}, nil))
	require.Equal(t, 1, run([]string{}, nil))
}
