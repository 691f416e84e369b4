package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/bench/pgbench"
)

func TestCaseString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Case
		want string
	}{
		{name: "plain", c: Case{Script: ScriptTPCB, Mode: "extended", Clients: 400}, want: "tpcb-like -M extended -c 400"},
		{name: "connect", c: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 10, Connect: true}, want: "select-only -M simple -c 10 -C"},
		{name: "rate", c: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 200, Rate: 1300}, want: "select-only -M simple -c 200 -R 1300"},
		{name: "connect and rate", c: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 2, Connect: true, Rate: 5}, want: "select-only -M simple -c 2 -C -R 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.c.String())
		})
	}
}

func TestPausedCases(t *testing.T) {
	t.Parallel()
	cases := pausedCases(DefaultSettings().Paused)
	require.Equal(t, []Case{
		{Script: ScriptSelectOnly, Mode: "simple", Clients: 200, Rate: 1300},
		{Script: ScriptSelectOnly, Mode: "simple", Clients: 400, Rate: 500},
	}, cases)
}

func TestPausedTimes(t *testing.T) {
	t.Parallel()
	s := DefaultSettings() // BENCH_TIME 7 s: the window is the minimum
	require.Equal(t, 12*time.Second, pausedWindow(s))
	require.Equal(t, 15*time.Second, pausedRunTime(s), "settle 1 s + window 12 s + tail 2 s")
	s.Duration = 20 * time.Second
	require.Equal(t, 20*time.Second, pausedWindow(s))
}

// windowRunResult makes a runResult whose window of length secs holds n
// transactions of lat µs and the given pooler CPU and context switches.
func windowRunResult(secs float64, n int, lat int64, user, sys time.Duration, cs int64) runResult {
	from := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := &WindowResult{From: from, To: from.Add(time.Duration(secs * float64(time.Second))),
		UserCPU: user, SystemCPU: sys, CtxSwitches: cs}
	for range n {
		w.TxLog.Latencies = append(w.TxLog.Latencies, lat)
	}
	// pgbench's own figures count every transaction of the run, logins included
	return runResult{Summary: pgbench.Summary{TPS: 1, Processed: int64(n) + 1000}, Window: w}
}

func TestRenderPaused(t *testing.T) {
	t.Parallel()
	r := testReport()
	require.NotContains(t, Render(r), "## Clients that pause", "no paused runs, no section")
	r.Paused = []CaseResult{{
		Case: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 200, Rate: 1300},
		Runs: map[string][]runResult{
			// 12 s windows of 15600 transactions: 1300 TPS
			TargetDirect: {windowRunResult(12, 15600, 800, 0, 0, 0), windowRunResult(12, 15600, 900, 0, 0, 0)},
			TargetPgBouncer: {
				windowRunResult(12, 15600, 1000, 156*time.Millisecond, 468*time.Millisecond, 31200),
				windowRunResult(12, 15600, 1000, 156*time.Millisecond, 468*time.Millisecond, 31200),
			},
			TargetDoorman: {
				windowRunResult(12, 15600, 1200, 624*time.Millisecond, 936*time.Millisecond, 78000),
				{Err: "measurement window: pgbench exited before the window ended", ExitCode: 1},
			},
		},
	}}
	md := Render(r)
	for _, want := range []string{
		"## Clients that pause (pgbench -R)\n\n`pgbench -b select-only -M simple -c <clients> -j 2 -R <rate> -T <t> -l`",
		"(200 clients at 1300 tx/s: 154 ms)",
		"opens 1 s after pgbench holds a socket per client (/proc/<pgbench>/fd, polled every 0.05 s;",
		"lasts 12 s and ends at least 2 s before pgbench's -T is up; t = 15 s + the connection slack",
		"(the same pooler processes, after its runs)",
		"| clients | -R | target | TPS | p50 / p99 ms | user µs/tx | system µs/tx | µs CPU/tx | context switches/tx | CPU / PgBouncer's |",
		"| 200 | 1300 | direct | 1300 | 0.80 / 0.90 | n/a | n/a | n/a | n/a | n/a |",
		"| 200 | 1300 | pgbouncer | 1300 | 1.00 / 1.00 | 10.0 | 30.0 | 40.0 | 2.00 | 1.00 |",
		// the failed round counts for nothing in the figures, and is listed
		"| 200 | 1300 | pg_doorman | 1300 | 1.20 / 1.20 | 40.0 | 60.0 | 100.0 | 5.00 | 2.50 |",
		"- select-only -M simple -c 200 -R 1300, pg_doorman: 1 failed run(s), 0 failed transaction(s), 0 aborted client(s); measurement window: pgbench exited",
	} {
		require.Contains(t, md, want)
	}
	// after section 1's tables, before section 2
	require.Less(t, strings.Index(md, "Time pgbench needed to connect all clients"), strings.Index(md, "## Clients that pause"))
	require.Less(t, strings.Index(md, "## Clients that pause"), strings.Index(md, "## 2. -M prepared"))
}
