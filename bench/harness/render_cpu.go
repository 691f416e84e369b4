package harness

import (
	"fmt"
	"strings"
	"time"
)

// writePoolerHeader writes the header of a table of writePoolerRow rows:
// the lead columns (e.g. "| -M | clients" aligned "|---|--:"), then TPS
// (named rate) and CPU per unit of both poolers with their ratios.
func writePoolerHeader(b *strings.Builder, lead, leadAlign, rate, unit string) {
	fmt.Fprintf(b, "%s | pgbouncer %s | pg_doorman %s | doorman / pgbouncer | pgbouncer µs CPU/%s | pg_doorman µs CPU/%s | doorman / pgbouncer CPU |\n",
		lead, rate, rate, unit, unit)
	fmt.Fprintf(b, "%s|--:|--:|--:|--:|--:|--:|\n", leadAlign)
}

// writePoolerRow writes "| lead | TPS | TPS | ratio | CPU | CPU | ratio |"
// for PgBouncer target p and pg_doorman target d of case c.
func writePoolerRow(b *strings.Builder, lead string, c CaseResult, p, d string) {
	pt, dt := c.TPS(p), c.TPS(d)
	pc, dc := c.CPUPerTx(p), c.CPUPerTx(d)
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", lead, tps(pt), tps(dt), ratio(dt, pt),
		micros(pc), micros(dc), ratio(float64(dc), float64(pc)))
}

// micros is a CPU time per transaction in µs, "n/a" when unmeasured.
func micros(d time.Duration) string {
	if d == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond))
}

// renderCPU is the pooler CPU per transaction of section 1's runs.
func renderCPU(b *strings.Builder, r Report) {
	fmt.Fprintf(b, "## Pooler CPU per transaction\n\n")
	b.WriteString("From the same interleaved runs as section 1: the pooler's utime + stime from /proc/PID/stat (USER_HZ ticks, 10 ms) read before and after each run, summed over the rounds and divided by the transactions pgbench processed (the run's few logins included). PgBouncer is one process with one thread; pg_doorman's figure is all its threads together.\n\n")
	writePoolerHeader(b, "| script | -M | clients", "|---|---|--:", "TPS", "tx")
	for _, c := range r.Matrix {
		writePoolerRow(b, fmt.Sprintf("%s | %s | %d", c.Script, c.Mode, c.Clients), c, TargetPgBouncer, TargetDoorman)
	}
	b.WriteString("\n")
}

// renderCPUSplit is where the CPU of cases' runs went per transaction:
// pgbench, the pooler and PostgreSQL, and how many CPUs that kept busy;
// title, then intro (the method, "" where said before). Reports from
// before these were measured (a re-rendered JSON) have no such table.
func renderCPUSplit(b *strings.Builder, title, intro string, cases []CaseResult) {
	measured := false
	for _, c := range cases {
		for _, t := range targetOrder {
			measured = measured || c.PostgresCPUPerTx(t) > 0
		}
	}
	if !measured {
		return
	}
	fmt.Fprintf(b, "%s\n\n", title)
	if intro != "" {
		fmt.Fprintf(b, "%s\n\n", intro)
	}
	b.WriteString("| script | -M | clients | target | TPS | pgbench µs/tx | pooler µs/tx | PostgreSQL µs/tx | all µs/tx | CPUs busy |\n|---|---|--:|---|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range cases {
		for _, t := range targetOrder {
			if len(c.Runs[t]) == 0 {
				continue
			}
			pgb, pooler, pg := c.PgbenchCPUPerTx(t), c.CPUPerTx(t), c.PostgresCPUPerTx(t)
			all := pgb + pooler + pg
			busy := "n/a"
			if n := c.CPUsBusy(t); n > 0 {
				busy = fmt.Sprintf("%.2f", n)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", c.Script, c.Mode, c.Clients, t, tps(c.TPS(t)),
				micros(pgb), micros(pooler), micros(pg), micros(all), busy)
		}
	}
	b.WriteString("\n")
}

// cpuSplitIntro says how renderCPUSplit's table is made, for a machine of
// cpus CPUs.
func cpuSplitIntro(cpus int) string {
	return fmt.Sprintf("From the same runs: pgbench's own CPU time (its rusage), the pooler's as above, and the whole PostgreSQL server's (the postmaster and its children from /proc/PID/stat, with the children it reaped: cutime and cstime), each divided by the transactions pgbench processed; each run's logins and pgbench's vacuum are in it. \"CPUs busy\" is the three processes' CPU time over the runs' wall time, connecting included. On this %d-CPU machine a figure near %d means that the runs were bound by CPU: then TPS ≈ CPUs busy ÷ all, and a pooler that costs less lets pgbench and PostgreSQL do more.", cpus, cpus)
}
