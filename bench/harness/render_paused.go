package harness

import (
	"fmt"
	"strings"
	"time"
)

// renderPaused is the section on clients that pause between transactions
// (pgbench -R), after section 1's tables; nothing when it did not run.
func renderPaused(b *strings.Builder, r Report) {
	if len(r.Paused) == 0 {
		return
	}
	s := r.Settings
	win := pausedWindow(s)
	fmt.Fprintf(b, "## Clients that pause (pgbench -R)\n\n")
	poolers := "the same pooler processes, after its runs"
	if len(r.Matrix) == 0 {
		poolers = "fresh pooler processes: BENCH_ONLY=paused ran this section alone"
	}
	fmt.Fprintf(b, "`pgbench -b select-only -M simple -c <clients> -j %d -R <rate> -T <t> -l` against the same three targets as section 1 (%s), interleaved the same way, %d round(s). -R spreads <rate> transactions per second over all clients on a Poisson schedule, so each client waits clients / rate seconds between transactions on average (%s) and most clients are quiet at any moment. ",
		s.Jobs, poolers, s.Rounds, pausesText(r.Paused))
	fmt.Fprintf(b, "Each run has a measurement window: it opens %s after pgbench holds a socket per client (/proc/<pgbench>/fd, polled every %s; pgbench connects all its clients before the first transaction), lasts %s and ends at least %s before pgbench's -T is up; t = %s + the connection slack of section 1 (%.2f x the probed connection time + 1 s). ",
		seconds(pausedSettle), seconds(pollInterval), seconds(win), seconds(pausedTail), seconds(pausedRunTime(s)), connMargin)
	b.WriteString("The pooler's utime and stime (/proc/PID/stat, 10 ms ticks) and its voluntary + involuntary context switches (summed over /proc/PID/task/*/status) are read at the window's two ends, and the transactions counted are those whose completion time in the -l logs falls inside the window; the logins, pgbench's vacuum and the ramp-up and end of the run are outside it. ")
	b.WriteString("TPS is the window's transactions per second of it (median over rounds); CPU and context switches per transaction are sums over the rounds divided by the rounds' transactions in the window; latency is nearest-rank over the transactions in the windows of all rounds, counted from each transaction's scheduled start as pgbench -R does (the schedule lag included). PgBouncer is one process with one thread; pg_doorman's figures are all its threads together.\n\n")
	b.WriteString("| clients | -R | target | TPS | p50 / p99 ms | user µs/tx | system µs/tx | µs CPU/tx | context switches/tx | CPU / PgBouncer's |\n")
	b.WriteString("|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range r.Paused {
		bu, bs, _ := c.WindowPerTx(TargetPgBouncer)
		for _, t := range targetOrder {
			user, sys, cs := c.WindowPerTx(t)
			l := c.WindowLatency(t)
			lat := "n/a"
			if l.N > 0 {
				lat = ms(l.P50) + " / " + ms(l.P99)
			}
			fmt.Fprintf(b, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Clients, c.Rate, t, tps(c.WindowTPS(t)), lat,
				micros(user), micros(sys), micros(user+sys), switchesText(cs), ratio(float64(user+sys), float64(bu+bs)))
		}
	}
	b.WriteString("\n")
	renderFailures(b, r.Paused, targetOrder[:])
}

// pausesText is the mean pause per client of each load: "200 clients at
// 1300 tx/s: 154 ms".
func pausesText(cases []CaseResult) string {
	var f []string
	for _, c := range cases {
		pause := time.Duration(float64(c.Clients) / float64(c.Rate) * float64(time.Second))
		f = append(f, fmt.Sprintf("%d clients at %d tx/s: %d ms", c.Clients, c.Rate, pause.Round(time.Millisecond).Milliseconds()))
	}
	return strings.Join(f, ", ")
}

// switchesText is context switches per transaction, "n/a" when unmeasured.
func switchesText(v float64) string {
	if v == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// seconds is d as "12 s" or "0.05 s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%g s", d.Seconds())
}
