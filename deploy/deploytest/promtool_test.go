//go:build linux

package deploytest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPromtool runs promtool on the shipped Prometheus files: the rules
// parse and their templates compile, the unit tests of
// pg_doorman_alerts_test.yml pass, and the example prometheus.yml loads.
func TestPromtool(t *testing.T) {
	t.Parallel()
	promtool := tool(t, "promtool")
	dir := filepath.Join(deployDir(t), "prometheus")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"check rules", []string{"check", "rules", "pg_doorman_alerts.yml"}},
		{"test rules", []string{"test", "rules", "pg_doorman_alerts_test.yml"}},
		{"check config", []string{"check", "config", "prometheus.yml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(promtool, tc.args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %v: %v\n%s", tc.args, err, out)
			}
			t.Logf("promtool %v:\n%s", tc.args, out)
		})
	}
}
