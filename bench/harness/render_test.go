package harness

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/bench/pgbench"
)

// run makes a runResult with a TPS and n transactions of lat µs each.
func run(tps float64, n int, lat int64) runResult {
	r := runResult{Summary: pgbench.Summary{TPS: tps, Processed: int64(n)}}
	for range n {
		r.TxLog.Latencies = append(r.TxLog.Latencies, lat)
	}
	return r
}

func testReport() Report {
	s := DefaultSettings()
	s.Clients = []int{400}
	aborted := runResult{Summary: pgbench.Summary{TPS: 300}, ExitCode: 2,
		Stderr: pgbench.Stderr{AbortedClients: 100, RunAborted: true, Errors: []string{`ERROR: prepared statement "P_0" does not exist`}}}
	return Report{
		Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Elapsed: time.Minute, Settings: s, MaxConns: 500,
		Machine: Machine{CPUs: 2, CPUModel: "AMD EPYC", LoadBefore: "0.10 0.20 0.30", LoadAfter: "1.00 1.00 1.00"},
		Matrix: []CaseResult{{
			Case: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 400},
			Runs: map[string][]runResult{
				TargetDirect:    {run(1000, 10, 2000), run(1200, 10, 2000)},
				TargetPgBouncer: {run(2000, 10, 1000), run(2000, 10, 1000)},
				TargetDoorman:   {run(3000, 10, 500), run(3000, 10, 500)},
			},
		}},
		Prepared: []CaseResult{{
			Case: Case{Script: ScriptSelectOnly, Mode: "prepared", Clients: 100},
			Runs: map[string][]runResult{
				TargetDirect: {run(5000, 1, 1)}, TargetPgBouncer: {aborted}, TargetDoorman: {run(4000, 1, 1)},
			},
		}},
		LoadMemory: map[string]Memory{TargetDoorman: {RSS: 20 << 20, Peak: 30 << 20}},
		Idle: []IdleResult{{Pooler: TargetPgBouncer, Clients: 2000, Opened: 2000,
			Started: Memory{RSS: 7 << 20}, Before: Memory{RSS: 8 << 20}, AtOnce: Memory{RSS: 8<<20 + 2000*700},
			After: Memory{RSS: 8<<20 + 2000*600, Peak: 9 << 20}}},
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	md := Render(testReport())
	for _, want := range []string{
		"2026-01-02 03:04 UTC",
		"| CPU model | AMD EPYC |",
		// medians 1100, 2000, 3000; ratios doorman/pgbouncer, doorman/direct, pgbouncer/direct
		"| select-only | simple | 400 | 1100 | 2000 | 3000 | 1.50 | 2.73 | 1.82 |",
		"| select-only | simple | 400 | 2.00 / 2.00 | 1.00 / 1.00 | 0.50 / 0.50 |",
		"| select-only | simple | pg_doorman | 20 | 0.50 | 0.50 | 0.50 | 1.0 |",
		`| select-only | pgbouncer | 300 | 0 | 100 | 2 | ERROR: prepared statement "P_0" does not exist |`,
		"| select-only | pg_doorman | 4000 | 0 | 0 | 0 |  |",
		"| pgbouncer | 2000 of 2000 | 7.0 MiB | 1024 KiB | 8.0 MiB | 9.3 MiB | 9.1 MiB | 9.0 MiB | 700 | 600 |",
		"| pg_doorman | 20.0 MiB | 30.0 MiB |",
		"No failed runs, failed transactions or aborted clients.",
		"-M prepared through pg_doorman in transaction mode ran without errors.",
		"-M prepared through pgbouncer in transaction mode failed (100 aborted client(s))",
		"the largest difference between rounds of the same case and target was 20% (select-only -M simple -c 400, direct)",
	} {
		require.Contains(t, md, want)
	}
	require.NotContains(t, md, "Other processes were busy")
}

func TestRenderFailuresAndLoad(t *testing.T) {
	t.Parallel()
	r := testReport()
	r.Machine.LoadBefore = "9.00 9.00 9.00"
	r.Matrix[0].Runs[TargetDirect][1] = runResult{Err: "exit code 0, pgbench summary has no tps line", TxLog: pgbench.TxLog{Failed: 3}}
	md := Render(r)
	require.Contains(t, md, "- select-only -M simple -c 400, direct: 1 failed run(s), 3 failed transaction(s), 0 aborted client(s); exit code 0")
	require.Contains(t, md, "| select-only | simple | 400 | 1000 |", "the failed round must not count in the median")
	require.Contains(t, md, "Other processes were busy")
}

func TestRatioAndCell(t *testing.T) {
	t.Parallel()
	require.Equal(t, "n/a", ratio(1, 0))
	require.Equal(t, "n/a", ratio(0, 1))
	require.Equal(t, "0.50", ratio(1, 2))
	require.Equal(t, `a \| b c`, cell("a | b\nc"))
}

func TestMatrixCases(t *testing.T) {
	t.Parallel()
	cases := matrixCases([]int{10, 400})
	require.Len(t, cases, 8)
	require.Equal(t, Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 10}, cases[0])
	require.Equal(t, Case{Script: ScriptTPCB, Mode: "extended", Clients: 400}, cases[7])
	require.Equal(t, "tpcb-like -M extended -c 400", cases[7].String())
}

func TestRenderConnTime(t *testing.T) {
	t.Parallel()
	r := testReport()
	for i, ms := range []float64{300, 500} {
		r.Matrix[0].Runs[TargetDirect][i].Summary.ConnTimeMS = ms
	}
	r.Matrix[0].Runs[TargetDoorman][0].Summary.ConnTimeMS = 40
	r.Matrix[0].Runs[TargetDoorman][1].Summary.ConnTimeMS = 60
	require.Contains(t, Render(r), "| select-only | simple | 400 | 400 | 0 | 50 |")
}

func TestKeptTail(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/b.md"
	require.Equal(t, "", KeptTail(path), "no file")
	require.NoError(t, os.WriteFile(path, []byte("# generated\n\nold table\n"), 0o644))
	require.Equal(t, "", KeptTail(path), "no marker")
	require.NoError(t, os.WriteFile(path, []byte("# generated\n\n"+KeptMarker+"\n\n## Soak\nkept\n"), 0o644))
	require.Equal(t, "\n"+KeptMarker+"\n\n## Soak\nkept\n", KeptTail(path))
}

func TestRenderFloor(t *testing.T) {
	t.Parallel()
	r := testReport()
	require.NotContains(t, Render(r), "## 7. The floor", "no floor runs, no section")
	cpuRun := func(tps float64, n int, user, sys time.Duration) runResult {
		res := run(tps, n, 100)
		res.PoolerUserCPU, res.PoolerCPU = user, user+sys
		return res
	}
	fw := floorTarget("epoll-netpoller")
	r.Floor = FloorReport{Loops: 1, Targets: []string{TargetPgBouncer, TargetDoorman, fw}, Cases: []CaseResult{{
		Case: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: 10},
		Runs: map[string][]runResult{
			// 1000 transactions in each round
			TargetPgBouncer: {cpuRun(100, 1000, 2*time.Millisecond, 18*time.Millisecond), cpuRun(100, 1000, 2*time.Millisecond, 18*time.Millisecond)},
			TargetDoorman:   {cpuRun(90, 1000, 10*time.Millisecond, 30*time.Millisecond), cpuRun(90, 1000, 10*time.Millisecond, 30*time.Millisecond)},
			fw:              {cpuRun(95, 1000, 3*time.Millisecond, 19*time.Millisecond), {Err: "pgbench failed", ExitCode: 1}},
		},
	}}}
	md := Render(r)
	for _, want := range []string{
		"## 7. The floor: forwarding alone",
		"The epoll forwarders run 1 loop(s).",
		"| simple | pgbouncer | 100 | 20.0 | 2.0 | 18.0 | 1.00 |",
		"| simple | pg_doorman | 90 | 40.0 | 10.0 | 30.0 | 2.00 |",
		// the failed round counts for nothing in the figures, and is listed
		"| simple | forwarder, epoll-netpoller | 95 | 22.0 | 3.0 | 19.0 | 1.10 |",
		"- select-only -M simple -c 10, forwarder, epoll-netpoller: 1 failed run(s)",
	} {
		require.Contains(t, md, want)
	}
}

// Section 2 runs Settings.Rounds rounds and says so.
func TestRenderPreparedRounds(t *testing.T) {
	t.Parallel()
	r := testReport()
	r.Settings.Rounds = 3
	require.Contains(t, Render(r), "## 2. -M prepared, 100 clients, pool 10\n\nInterleaved as section 1, 3 round(s);")
}

// TestRenderFloorPooled: the floor section's second table compares the
// txpool forwarder's CPU and tail with PgBouncer's at pooledClients.
func TestRenderFloorPooled(t *testing.T) {
	t.Parallel()
	r := testReport()
	tx := floorTarget("txpool")
	cpuRun := func(tps float64, n int, lat int64, cpu time.Duration) runResult {
		res := run(tps, n, lat)
		res.PoolerCPU = cpu
		return res
	}
	r.Floor = FloorReport{
		Cases: []CaseResult{{
			Case: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: floorClients},
			Runs: map[string][]runResult{TargetPgBouncer: {cpuRun(100, 10, 1000, 200*time.Microsecond)}},
		}},
		Targets:       []string{TargetPgBouncer},
		Loops:         1,
		PoolSize:      40,
		PooledTargets: []string{TargetPgBouncer, TargetDoorman, tx},
		Pooled: []CaseResult{{
			Case: Case{Script: ScriptSelectOnly, Mode: "simple", Clients: pooledClients},
			Runs: map[string][]runResult{
				TargetPgBouncer: {cpuRun(2000, 10, 1000, 200*time.Microsecond)},
				TargetDoorman:   {cpuRun(2500, 10, 2000, 300*time.Microsecond)},
				tx:              {cpuRun(2100, 10, 1000, 180*time.Microsecond)},
			},
		}},
	}
	md := Render(r)
	for _, want := range []string{
		"lends one of 40 server connections",
		"with 400 clients on pools of 40",
		"| pgbouncer | 2000 | 20.0 | 1.00 | 1.00 | 1.00 | 1.0 |",
		"| pg_doorman | 2500 | 30.0 | 1.50 | 2.00 | 2.00 | 1.0 |",
		"| forwarder, txpool | 2100 | 18.0 | 0.90 | 1.00 | 1.00 | 1.0 |",
	} {
		require.Contains(t, md, want)
	}
}

// TestRenderCPUSplit: the table of each process's CPU per transaction
// divides each process's CPU by the transactions and multiplies their sum
// by the TPS; a report without the measurement (an older JSON) has none.
func TestRenderCPUSplit(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	split := func(tps float64, n int, pgbenchCPU, pooler, pg, elapsed time.Duration) runResult {
		res := run(tps, n, 1000)
		res.PgbenchCPU, res.PoolerCPU, res.PostgresCPU, res.Elapsed = pgbenchCPU, pooler, pg, elapsed
		return res
	}
	r := testReport()
	r.Matrix[0].Runs = map[string][]runResult{
		// 20 transactions: 20, 0 and 60 µs each; 1.6 ms of CPU in 2 × 10 ms
		TargetDirect: {split(1000, 10, 200*time.Microsecond, 0, 600*time.Microsecond, 10*ms), split(1200, 10, 200*time.Microsecond, 0, 600*time.Microsecond, 10*ms)},
		// 10 µs + 30 µs + 100 µs a transaction: 1.4 ms of CPU in 1 ms
		TargetPgBouncer: {split(10000, 10, 100*time.Microsecond, 300*time.Microsecond, ms, ms)},
		TargetDoorman:   {split(12500, 10, 100*time.Microsecond, 250*time.Microsecond, 750*time.Microsecond, 2*ms)},
	}
	r.Prepared[0].Runs[TargetDoorman] = []runResult{split(4000, 4, 40*time.Microsecond, 40*time.Microsecond, 120*time.Microsecond, ms)}
	md := Render(r)
	for _, want := range []string{
		"## Each process's CPU per transaction\n",
		"On this 2-CPU machine a figure near 2 means",
		"| select-only | simple | 400 | direct | 1100 | 20.0 | n/a | 60.0 | 80.0 | 0.08 |",
		"| select-only | simple | 400 | pgbouncer | 10000 | 10.0 | 30.0 | 100.0 | 140.0 | 1.40 |",
		"| select-only | simple | 400 | pg_doorman | 12500 | 10.0 | 25.0 | 75.0 | 110.0 | 0.55 |",
		"Each process's CPU per transaction in section 2, measured as after section 1:\n\n| script |",
		"| select-only | prepared | 100 | pg_doorman | 4000 | 10.0 | 10.0 | 30.0 | 50.0 | 0.20 |",
	} {
		require.Contains(t, md, want)
	}

	old := Render(testReport())
	require.NotContains(t, old, "Each process's CPU per transaction")
}
