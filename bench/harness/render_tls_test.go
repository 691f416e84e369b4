package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/bench/pgbench"
)

// cpuRun is a successful run of n transactions at tps that cost the
// pooler cpu.
func cpuRun(tps float64, n int64, cpu time.Duration) runResult {
	return runResult{Summary: pgbench.Summary{TPS: tps, Processed: n}, PoolerCPU: cpu}
}

func TestTLSCases(t *testing.T) {
	t.Parallel()
	cases, connect := tlsCases([]int{10, 100}, 5)
	require.Equal(t, []Case{
		{Script: ScriptSelectOnly, Mode: "simple", Clients: 10},
		{Script: ScriptSelectOnly, Mode: "simple", Clients: 100},
		{Script: ScriptSelectOnly, Mode: "extended", Clients: 10},
		{Script: ScriptSelectOnly, Mode: "extended", Clients: 100},
	}, cases)
	require.Equal(t, []Case{{Script: ScriptSelectOnly, Mode: "simple", Clients: 5, Connect: true}}, connect)
	require.Equal(t, "select-only -M simple -c 5 -C", connect[0].String())
}

func TestCPUPerTx(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		runs []runResult
		want time.Duration
	}{
		{name: "none", want: 0},
		{name: "one run", runs: []runResult{cpuRun(1000, 10000, time.Second)}, want: 100 * time.Microsecond},
		// (1 s + 3 s) / 40,000 transactions
		{name: "summed over rounds", runs: []runResult{cpuRun(1000, 10000, time.Second), cpuRun(1000, 30000, 3*time.Second)}, want: 100 * time.Microsecond},
		{name: "rounds weighted by transactions", runs: []runResult{cpuRun(1000, 10000, time.Second), cpuRun(1000, 10000, 3*time.Second)}, want: 200 * time.Microsecond},
		{name: "failed run left out", runs: []runResult{cpuRun(1000, 10000, time.Second), {Err: "no summary", PoolerCPU: time.Hour}}, want: 100 * time.Microsecond},
		{name: "no transactions", runs: []runResult{cpuRun(0, 0, time.Second)}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := CaseResult{Runs: map[string][]runResult{TargetDoorman: tt.runs}}
			require.Equal(t, tt.want, c.CPUPerTx(TargetDoorman))
		})
	}
}

func tlsReport() Report {
	r := testReport()
	r.Settings.Rounds = 1
	r.TLS = TLSReport{
		Cases: []CaseResult{{
			Case: Case{Script: ScriptSelectOnly, Mode: "extended", Clients: 100},
			Runs: map[string][]runResult{
				TargetPgBouncer:      {cpuRun(8000, 80000, 4*time.Second)},   // 50 µs/tx
				TargetDoorman:        {cpuRun(10000, 100000, 8*time.Second)}, // 80 µs/tx
				TargetPgBouncerPlain: {cpuRun(9000, 90000, 2700*time.Millisecond)},
				TargetDoormanPlain:   {cpuRun(11000, 110000, 6600*time.Millisecond)},
			},
		}},
		Connect: []CaseResult{{
			Case: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 10, Connect: true},
			Runs: map[string][]runResult{
				TargetPgBouncer:      {cpuRun(400, 4000, 2*time.Second)}, // 500 µs/connection
				TargetDoorman:        {cpuRun(600, 6000, 1500*time.Millisecond)},
				TargetPgBouncerPlain: {cpuRun(900, 9000, 900*time.Millisecond)},
				TargetDoormanPlain:   {{Err: "exit code 2", ExitCode: 2, Stderr: pgbench.Stderr{Errors: []string{"FATAL: too many connections"}}}},
			},
		}},
	}
	return r
}

func TestRenderTLS(t *testing.T) {
	t.Parallel()
	md := RenderTLS(tlsReport())
	for _, want := range []string{
		"# Benchmarks with TLS from clients: pg_doorman vs PgBouncer",
		"2026-01-02 03:04 UTC",
		"| CPU model | AMD EPYC |",
		"`client_tls_sslmode = require`", "`tls_mode: require`", "PGSSLMODE=require", "`PGSSLMODE=disable` against the plaintext two",
		// TPS 8000 / 10000, ratio 1.25; CPU 50 µs and 80 µs per transaction, ratio 1.60
		"| extended | 100 | 8000 | 10000 | 1.25 | 50.0 | 80.0 | 1.60 |",
		// baseline: 30 µs and 60 µs
		"| extended | 100 | 9000 | 11000 | 1.22 | 30.0 | 60.0 | 2.00 |",
		// connect rate over TLS: 500 µs and 250 µs per connection
		"| require | 10 | 400 | 600 | 1.50 | 500.0 | 250.0 | 0.50 |",
		"| no | 10 | 900 | n/a | n/a | 100.0 | n/a | n/a |",
		"- select-only -M simple -c 10 -C, pg_doorman, no TLS: 1 failed run(s), 0 failed transaction(s), 0 aborted client(s); FATAL: too many connections; exit code 2",
		"With one round there is no measure of run-to-run noise",
	} {
		require.Contains(t, md, want)
	}
	require.NotContains(t, md, "## 1. Throughput", "the main report's sections are not in the TLS file")
	require.NotContains(t, md, "No failed runs")
}

func TestRenderTLSNoFailures(t *testing.T) {
	t.Parallel()
	r := tlsReport()
	r.TLS.Connect[0].Runs[TargetDoormanPlain] = []runResult{cpuRun(700, 7000, 700*time.Millisecond)}
	md := RenderTLS(r)
	require.Contains(t, md, "No failed runs, failed transactions or aborted clients.")
	require.Contains(t, md, "| no | 10 | 900 | 700 | 0.78 | 100.0 | 100.0 | 1.00 |")
}

func TestRenderTLSWarmUps(t *testing.T) {
	t.Parallel()
	r := tlsReport()
	require.NotContains(t, RenderTLS(r), "Before the first round", "a report from before the warm-up says nothing of it")
	for _, name := range tlsTargetOrder {
		r.TLS.WarmUps = append(r.TLS.WarmUps, WarmUp{Target: name, DB: benchDB, Clients: 100}, WarmUp{Target: name, DB: benchDB, Clients: 10})
	}
	require.Contains(t, RenderTLS(r), "With -C that is CPU per connection.\n- Before the first round each of the four poolers ran select-only -M simple for 5 s at 100, 10 clients (in that order), not counted, the TLS two over TLS")
}
