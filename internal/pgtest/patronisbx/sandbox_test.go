package patronisbx

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLayout(t *testing.T) {
	s := New()
	require.Len(t, s.Nodes, Nodes)
	require.Equal(t, Node{
		Name: "node2", Host: "127.0.1.2", Port: 25432, APIURL: "http://127.0.1.2:28008",
		SocketDir: "/tmp/doorman-e2e-sbx/node2/sock", DataDir: "/tmp/doorman-e2e-sbx/node2/data",
	}, s.Nodes[1])
	require.Equal(t, "127.0.1.3:25432", s.Nodes[2].Addr())
	require.Equal(t, []string{"http://127.0.1.1:28008", "http://127.0.1.2:28008", "http://127.0.1.3:28008"}, s.APIURLs())
}

// TestScriptsVendored: a clean checkout has every script up.sh needs, the
// executable ones with their x bit.
func TestScriptsVendored(t *testing.T) {
	dir := scriptDir()
	for _, name := range []string{"up.sh", "down.sh", "pctl.sh", "sbx.py", "common.sh"} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		if name != "common.sh" {
			require.NotZero(t, st.Mode().Perm()&0o100, "%s must be executable", name)
		}
	}
}

func TestUpSkipsWithoutEnv(t *testing.T) {
	t.Setenv(EnvVar, "")
	var ran bool
	t.Run("up", func(t *testing.T) {
		Up(t)
		ran = true
	})
	require.False(t, ran, "Up skips the test")
}

// TestPostmasterPIDChecksCommandLine: a pid file naming a process that is
// not a postgres of that data directory is never trusted (so never killed).
func TestPostmasterPIDChecksCommandLine(t *testing.T) {
	data := t.TempDir()
	write := func(content string) {
		require.NoError(t, os.WriteFile(filepath.Join(data, "postmaster.pid"), []byte(content), 0o600))
	}
	_, err := postmasterPID(data)
	require.Error(t, err, "no pid file")
	write(strconv.Itoa(os.Getpid()) + "\n" + data + "\n")
	_, err = postmasterPID(data)
	require.ErrorContains(t, err, "is not the postmaster of")
	write("x\n")
	_, err = postmasterPID(data)
	require.ErrorContains(t, err, "bad postmaster.pid")
}
