package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/testbuf"
)

// seGone reports whether pid has exited: no such process, or a zombie
// waiting for a reaper (the daemon's parent exits at once, and PID 1 of a
// container may not reap).
func seGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// TestSettingDaemonPIDFile: with -d, pg_doorman goes to the background and
// general.daemon_pid_file holds the PID of the process that serves; without
// -d it runs in the foreground and writes no PID file.
func TestSettingDaemonPIDFile(t *testing.T) {
	bin, err := buildBinary()
	require.NoError(t, err)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pg_doorman.pid")
	p := &process{stderr: &testbuf.Buffer{}, port: apptest.FreePort(t), path: filepath.Join(dir, "c.yaml")}
	doc := fmt.Sprintf("general:\n  host: 127.0.0.1\n  port: %d\n  unix_socket_dir: \"\"\n  admin_password: admin-pw\n  daemon_pid_file: %q\npools: {}\n", p.port, pidFile)
	require.NoError(t, os.WriteFile(p.path, []byte(doc), 0o600))

	t.Run("without -d: foreground, no pid file", func(t *testing.T) {
		p.cmd = exec.Command(bin, p.path)
		p.cmd.Stderr = p.stderr
		require.NoError(t, p.cmd.Start())
		t.Cleanup(func() {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
		})
		require.Equal(t, "info", p.showLogLevel(t), "serving in the foreground")
		_, err := os.Stat(pidFile)
		require.ErrorIs(t, err, os.ErrNotExist)
		p.stop(t)
	})

	t.Run("with -d: background, pid file holds the server's PID", func(t *testing.T) {
		out, err := exec.Command(bin, "-d", p.path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		body, err := os.ReadFile(pidFile)
		require.NoError(t, err, "pid file written; parent said: %s", out)
		pid, err := strconv.Atoi(strings.TrimSpace(string(body)))
		require.NoError(t, err, "pid file content %q", body)
		t.Cleanup(func() {
			if !seGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		require.Contains(t, string(out), fmt.Sprintf("pid %d", pid))
		require.False(t, seGone(pid), "the daemon runs after its parent exited")
		require.Equal(t, "info", p.showLogLevel(t), "the daemon serves")
		sid, err := unix.Getsid(pid)
		require.NoError(t, err)
		require.Equal(t, pid, sid, "the daemon leads its own session")

		require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
		require.Eventually(t, func() bool { return seGone(pid) }, 30*time.Second, 20*time.Millisecond, "daemon did not exit on SIGTERM")
		_, err = os.Stat(pidFile)
		require.ErrorIs(t, err, os.ErrNotExist, "the daemon removes its pid file on exit")
	})
}
