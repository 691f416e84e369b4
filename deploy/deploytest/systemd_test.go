//go:build linux

package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSystemdUnits: the shipped units pass systemd-analyze verify with no
// complaint (the ExecStart binary swapped for one that exists here), and
// pg_doorman's unit does what a binary upgrade needs: Type=notify,
// NotifyAccess=all for the new process's MAINPID=, reload = SIGUSR2.
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	require.NoError(t, err, "systemd-analyze is needed: apt-get install systemd")
	for _, unit := range []string{"pg_doorman/pg_doorman.service", "patroni_proxy/patroni_proxy.service"} {
		t.Run(unit, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(deployDir(t), unit))
			require.NoError(t, err)
			text := string(body)
			for _, bin := range []string{"/usr/bin/pg_doorman", "/usr/bin/patroni_proxy"} {
				text = strings.ReplaceAll(text, bin, "/bin/true")
			}
			path := filepath.Join(t.TempDir(), filepath.Base(unit))
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			out, err := exec.Command(analyze, "verify", path).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has remarks")
		})
	}
	body, err := os.ReadFile(filepath.Join(deployDir(t), "pg_doorman/pg_doorman.service"))
	require.NoError(t, err)
	for _, line := range []string{"Type=notify", "NotifyAccess=all", "ExecReload=/bin/kill -USR2 $MAINPID"} {
		require.Contains(t, string(body), "\n"+line+"\n")
	}
}
