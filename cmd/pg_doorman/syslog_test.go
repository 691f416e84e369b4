package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// TestSyslogProgNameWithoutDaemon: general.syslog_prog_name reaches the
// logger: where no syslog daemon listens (a container, CI), pg_doorman
// does not start and names the sockets it tried, rather than log nowhere.
// (What goes to a daemon that listens is internal/logging's test.)
func TestSyslogProgNameWithoutDaemon(t *testing.T) {
	for _, p := range []string{"/dev/log", "/var/run/syslog", "/var/run/log"} {
		if c, err := net.Dial("unixgram", p); err == nil {
			_ = c.Close()
			t.Skipf("a syslog daemon listens on %s here", p)
		}
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "c.yaml")
	doc := fmt.Sprintf("general:\n  host: 127.0.0.1\n  port: %d\n  unix_socket_dir: \"\"\n  admin_password: admin-pw\n  syslog_prog_name: pgd-test\npools: {}\n", apptest.FreePort(t))
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	out, err := exec.Command(bin, path).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, string(out), `syslog_prog_name "pgd-test": no syslog daemon listens on /dev/log`)
}
