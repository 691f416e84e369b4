package drill_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/pgtest/patronisbx"
)

// syncMode turns Patroni's synchronous_mode on (PATCH /config on the
// leader), waits until /cluster lists a serving sync_standby and returns its
// name. WaitHealthy (up.sh with SYNC=0) turns it off again before the next
// run.
func syncMode(t *testing.T, sbx *patronisbx.Sandbox) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPatch, sbx.Leader(t).APIURL+"/config", strings.NewReader(`{"synchronous_mode": true}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "PATCH /config synchronous_mode")
	var sync string
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cl, err := sbx.FetchCluster(ctx)
		if err != nil {
			return false
		}
		for _, m := range cl.Members {
			if m.Role == patroni.RoleSyncStandby && m.Serving() {
				sync = m.Name
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "a sync_standby appears")
	return sync
}

// summaryTable is min / median / max of the write gap and of the first
// acknowledged write after the action, per scenario and stack, in the
// order first seen: the table docs/failover.md quotes.
func summaryTable(all []result) string {
	type key struct{ sc, st string }
	var order []key
	gaps, firsts, rejected, missing := map[key][]float64{}, map[key][]float64{}, map[key]int{}, map[key]int{}
	for _, r := range all {
		k := key{r.Scenario, r.Stack}
		if _, ok := gaps[k]; !ok {
			order = append(order, k)
		}
		gaps[k] = append(gaps[k], r.GapS)
		if r.FirstAckS >= 0 { // -1: writes never resumed in the run
			firsts[k] = append(firsts[k], r.FirstAckS)
		}
		rejected[k] += r.Rejected
		missing[k] += r.AckMissing
	}
	var b strings.Builder
	b.WriteString("| scenario | stack | runs | write gap min / median / max, s | first ack on new after action min / median / max, s | rejected | acknowledged missing |\n|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s (%d runs) | %d | %d |\n", k.sc, k.st, len(gaps[k]), mmm(gaps[k]),
			mmm(firsts[k]), len(firsts[k]), rejected[k], missing[k])
	}
	pairedTable(&b, all)
	return b.String()
}

// pairedTable adds, for runs where both stacks ran across the same action
// (DRILL_PAIRED=1), each run's gaps and the ratio ours / direct.
func pairedTable(b *strings.Builder, all []result) {
	type key struct {
		sc  string
		run int
	}
	var order []key
	gap := map[key]map[string]float64{}
	for _, r := range all {
		if !r.Paired {
			continue
		}
		k := key{r.Scenario, r.Run}
		if gap[k] == nil {
			gap[k] = map[string]float64{}
			order = append(order, k)
		}
		gap[k][r.Stack] = r.GapS
	}
	if len(order) == 0 {
		return
	}
	b.WriteString("\n| scenario | run (paired) | direct gap, s | ours gap, s | ours / direct |\n|---|---|---|---|---|\n")
	for _, k := range order {
		d, o := gap[k]["direct"], gap[k]["ours"]
		ratio := "n/a"
		if d > 0 {
			ratio = fmt.Sprintf("%.2f", o/d)
		}
		fmt.Fprintf(b, "| %s | %d | %.2f | %.2f | %s |\n", k.sc, k.run, d, o, ratio)
	}
}

func mmm(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", s[0], med, s[len(s)-1])
}

// TestSummaryTablePaired: runs of both stacks across the same action get a
// row each with their ratio; runs one after the other get none.
func TestSummaryTablePaired(t *testing.T) {
	all := []result{
		{Scenario: "kill_postmaster", Stack: "direct", Run: 0, Paired: true, GapS: 4.0},
		{Scenario: "kill_postmaster", Stack: "ours", Run: 0, Paired: true, GapS: 5.0},
		{Scenario: "switchover", Stack: "direct", Run: 0, GapS: 1.5},
		{Scenario: "switchover", Stack: "ours", Run: 0, GapS: 1.6},
	}
	got := summaryTable(all)
	require.Contains(t, got, "| kill_postmaster | 0 | 4.00 | 5.00 | 1.25 |")
	require.NotContains(t, got, "| switchover | 0 |")
	require.NotContains(t, summaryTable(all[2:]), "run (paired)")
}
