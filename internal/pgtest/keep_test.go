package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// failedTB records what cleanup reports for a test that failed.
type failedTB struct {
	testing.TB
	logs, errs []string
}

func (f *failedTB) Failed() bool { return true }
func (f *failedTB) Helper()      {}
func (f *failedTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *failedTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func TestCleanupOfFailedTest(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			if keep {
				t.Setenv("PGTEST_KEEP", "1")
			} else {
				t.Setenv("PGTEST_KEEP", "")
			}
			c, err := newCluster(context.Background(), Options{}, nil)
			require.NoError(t, err)
			pid, err := c.PID()
			require.NoError(t, err)
			marker := filepath.Join(c.env.root, "KEEP")

			fake := &failedTB{TB: t}
			c.cleanup(fake)
			require.Empty(t, fake.errs)
			require.False(t, alive(pid), "the server is stopped either way")
			require.Contains(t, strings.Join(fake.logs, "\n"), "database system is ready to accept connections",
				"the log tail of a failed test is printed")
			if keep {
				require.DirExists(t, c.DataDir)
				require.FileExists(t, marker)
				require.NoError(t, os.Remove(marker))
				require.NoError(t, c.destroy())
			} else {
				require.NoDirExists(t, c.Dir)
				require.NoFileExists(t, marker)
			}
		})
	}
}
