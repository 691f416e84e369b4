package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/drill"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// TestDrillCommand runs the built binary against a real PostgreSQL: exit 0,
// the table on stdout, the JSON report in --json with every event, and a
// bad flag is exit 2.
func TestDrillCommand(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	bin := binary(t)
	jsonPath := filepath.Join(t.TempDir(), "drill.json")
	cmd := exec.Command(bin, "drill", "--dsn", pg.DSN("postgres", "", "postgres"), "--workers", "2",
		"--duration", "500ms", "--json", jsonPath, "--events")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "acknowledged missing")
	require.Contains(t, string(out), "write gap")
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var r drill.Report
	require.NoError(t, json.Unmarshal(b, &r))
	require.True(t, r.Reconciliation.Done)
	require.Zero(t, r.Reconciliation.Violations())
	require.NotEmpty(t, r.Events)
	require.Equal(t, len(r.Events), r.Summary.Outcomes[drill.Acknowledged])
	require.Zero(t, pg.QueryInt(t, "SELECT count(*) FROM pg_class WHERE relname LIKE 'doorman_drill_%'"), "table dropped")

	err = exec.Command(bin, "drill", "--dsn", pg.DSN("postgres", "", "postgres"), "--workers", "0").Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, exitDrillError, ee.ExitCode())
}
