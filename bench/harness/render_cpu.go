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
