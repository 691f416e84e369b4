package session_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// hpTxScript is a pgbench script whose transaction block holds a server
// while other clients of the same pgbench thread still have to prepare.
const hpTxScript = "SELECT 1;\nBEGIN;\nSELECT 1;\nSELECT 1;\nEND;\n"

func TestHostilePreparedPgbenchTransactionScript(t *testing.T) {
	pgbench, err := pgtest.FindBinary("pgbench")
	require.NoError(t, err)
	d := start(t, "", "transaction", 5)
	script := filepath.Join(t.TempDir(), "tx.sql")
	require.NoError(t, os.WriteFile(script, []byte(hpTxScript), 0o644))
	cmd := exec.Command(pgbench, "-n", "-c", "10", "-j", "2", "-t", "200", "-M", "prepared", "-f", script,
		"-h", "127.0.0.1", "-p", fmt.Sprint(d.Port), "-U", "app", "appdb")
	cmd.Env = append(os.Environ(), "PGPASSWORD=app-secret")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	m := failedRE.FindStringSubmatch(string(out))
	require.NotNil(t, m, string(out))
	require.Equal(t, "0", m[1], string(out))
}
