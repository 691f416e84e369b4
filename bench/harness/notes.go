package harness

import (
	"fmt"
	"strconv"
	"strings"
)

// renderNotes writes the caveats, some of them computed from the results.
func renderNotes(b *strings.Builder, r Report) {
	b.WriteString("## Notes\n\n")
	notes := []string{
		fmt.Sprintf("This machine has %d CPU(s). pgbench, PostgreSQL and the pooler compete for them, so the numbers measure the whole system, not the pooler alone; a pooler's CPU is taken from PostgreSQL and pgbench. pg_doorman can use every core, PgBouncer one.", r.Machine.CPUs),
		loadNote(r.Machine),
		spreadNote(r.Matrix),
		"Durability is off (fsync, synchronous_commit), so tpcb-like measures CPU and locking, not the disk; at small scale the tpcb-like update of pgbench_branches serializes clients, which flattens all three targets at high client counts.",
		"Direct connections with many clients run one PostgreSQL backend per client; the poolers multiplex them over the pool, which is why a pooler can beat direct PostgreSQL with many clients and lose with few.",
		"pgbench -l writes one line per transaction; the cost is the same for every target.",
	}
	notes = append(notes, preparedNotes(r.Prepared)...)
	notes = append(notes, "pg_doorman is a Go program: its RSS includes heap the garbage collector has not yet returned to the OS, so RSS moves more between runs than PgBouncer's.")
	for _, n := range notes {
		if n != "" {
			fmt.Fprintf(b, "- %s\n", n)
		}
	}
}

// loadNote warns when other processes were busy during the run.
func loadNote(m Machine) string {
	start := firstLoad(m.LoadBefore)
	end := firstLoad(m.LoadAfter)
	if start < 0 {
		return ""
	}
	s := fmt.Sprintf("Load average was %s at the start and %s at the end; the benchmark itself keeps up to (clients + 3) processes runnable while it runs.", m.LoadBefore, m.LoadAfter)
	if start > 0.5*float64(m.CPUs) || end > 2*float64(m.CPUs) {
		s += " Other processes were busy on this machine: treat the numbers as rough and compare ratios within a row rather than absolute TPS."
	}
	return s
}

func firstLoad(avg string) float64 {
	f := strings.Fields(avg)
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// spreadNote reports the largest round-to-round TPS difference.
func spreadNote(cases []CaseResult) string {
	return spreadNoteFor(cases, targetOrder[:])
}

// spreadNoteFor is spreadNote over the given targets.
func spreadNoteFor(cases []CaseResult, targets []string) string {
	worst, where := 0.0, ""
	for _, c := range cases {
		for _, t := range targets {
			lo, hi := 0.0, 0.0
			for _, run := range c.Runs[t] {
				v := run.Summary.TPS
				if v <= 0 {
					continue
				}
				if lo == 0 || v < lo {
					lo = v
				}
				hi = max(hi, v)
			}
			if lo > 0 && (hi-lo)/lo > worst {
				worst, where = (hi-lo)/lo, fmt.Sprintf("%s, %s", c.Case, t)
			}
		}
	}
	if where == "" {
		return "With one round there is no measure of run-to-run noise; set BENCH_ROUNDS=3 for one."
	}
	return fmt.Sprintf("Run-to-run noise: the largest difference between rounds of the same case and target was %.0f%% (%s); ratios closer to 1 than that are not significant.", 100*worst, where)
}

// preparedNotes says in words what happened in the -M prepared test.
func preparedNotes(cases []CaseResult) []string {
	var out []string
	for _, name := range []string{TargetDoorman, TargetPgBouncer} {
		var failed, aborted int64
		var errs []string
		for _, c := range cases {
			tx, ab, runs := c.Failed(name)
			failed += tx + int64(runs)
			aborted += int64(ab)
			errs = append(errs, c.Errors(name)...)
		}
		if len(cases) == 0 {
			continue
		}
		if failed == 0 && aborted == 0 {
			out = append(out, fmt.Sprintf("-M prepared through %s in transaction mode ran without errors.", name))
			continue
		}
		first := "no error text"
		if len(errs) > 0 {
			first = errs[0]
		}
		out = append(out, fmt.Sprintf("-M prepared through %s in transaction mode failed (%d aborted client(s)); first error: %s.", name, aborted, cell(first)))
	}
	return out
}
