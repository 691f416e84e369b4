package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCrashedTestBinaryLeavesNothing runs itself as a child that starts a
// cluster and exits without cleanup, as a crashed test binary would: the
// postmaster must die with it and CleanupStale must remove its files.
func TestCrashedTestBinaryLeavesNothing(t *testing.T) {
	if os.Getenv("PGTEST_CRASH_CHILD") == "1" {
		c, _, err := StartMain(Options{})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
		pid, _ := c.PID()
		fmt.Printf("CLUSTER %s %d\n", c.Dir, pid)
		os.Exit(3)
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashedTestBinaryLeavesNothing$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PGTEST_CRASH_CHILD=1")
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "child: %v\n%s", err, out)
	require.Equal(t, 3, exitErr.ExitCode(), "child output:\n%s", out)

	var dir string
	var pid int
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "CLUSTER ") {
			_, err := fmt.Sscanf(line, "CLUSTER %s %d", &dir, &pid)
			require.NoError(t, err)
		}
	}
	require.NotEmpty(t, dir, "child output:\n%s", out)
	require.DirExists(t, dir)
	require.Eventually(t, func() bool { return !alive(pid) }, 30*time.Second, pollInterval,
		"the postmaster must die with the test binary")

	CleanupStale()
	require.NoDirExists(t, filepath.Dir(dir))
}

func TestCleanupStaleKeepsLiveAndKept(t *testing.T) {
	t.Parallel()
	base := os.TempDir()
	live, err := os.MkdirTemp(base, fmt.Sprintf("pgtest-%d-", os.Getpid()))
	require.NoError(t, err)
	defer os.RemoveAll(live)

	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	deadPID := dead.Process.Pid
	kept, err := os.MkdirTemp(base, fmt.Sprintf("pgtest-%d-", deadPID))
	require.NoError(t, err)
	defer os.RemoveAll(kept)
	require.NoError(t, os.WriteFile(filepath.Join(kept, "KEEP"), nil, 0o644))
	stale, err := os.MkdirTemp(base, fmt.Sprintf("pgtest-%d-", deadPID))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "c1", "data"), 0o755))
	// A pid file naming a live process that is not its postmaster: that
	// process must survive.
	pidFile := fmt.Sprintf("%d\n%s\n", os.Getpid(), filepath.Join(stale, "c1", "data"))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "c1", "data", "postmaster.pid"), []byte(pidFile), 0o600))

	CleanupStale()
	require.DirExists(t, live)
	require.DirExists(t, kept)
	require.NoDirExists(t, stale)
}
