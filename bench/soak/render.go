package soak

import (
	"fmt"
	"strings"
	"time"
)

// Report is everything one Run measured.
type Report struct {
	Settings    Settings
	Date        time.Time
	Commit      string
	Postgres    string
	Elapsed     time.Duration // of the load
	Interrupted bool
	Samples     []Sample // the first one is taken before the load
	Totals      Totals
	Errors      []ErrorText // distinct unexpected errors
	Verdict     Verdict
}

// tableKinds are the work columns of the table, in order.
var tableKinds = []Kind{KindSelect, KindTPCB, KindPrepared, KindCopyIn, KindCopyOut, KindBig}

// Render is the report as a Markdown fragment.
func Render(r Report) string {
	var b strings.Builder
	s := r.Settings
	fmt.Fprintf(&b, "%d clients through pg_doorman (transaction mode, pool_size %d) for %s, commit %s, %s, started %s.\n",
		s.Clients, s.PoolSize, r.Elapsed.Round(time.Second), r.Commit, r.Postgres, r.Date.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "One row per sample (mm:ss since the load started; \"stopped\": after the clients stopped, not judged); "+
		"work columns count what finished in the interval before the sample. "+
		"Warm-up %s: RSS is judged on the samples from then on, by (max - min) / min <= %.0f%% or max - min <= %s.\n\n",
		s.WarmupTime(), 100*s.Tolerance, mib(s.Slack))
	b.WriteString("| at | RSS MiB | VmHWM MiB | heap MiB | goroutines | fds |")
	for _, k := range tableKinds {
		fmt.Fprintf(&b, " %s |", k)
	}
	b.WriteString(" kills | logins | cancels | expected errors | unexpected errors |\n|---|")
	b.WriteString(strings.Repeat("--:|", 5+len(tableKinds)+5) + "\n")
	var cancels int64 // pg_doorman's counter is cumulative; the table shows each interval
	for _, sm := range r.Samples {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d |", at(sm), mibNum(sm.RSS), mibNum(sm.HWM), mibNum(sm.Heap), sm.Goroutines, sm.FDs)
		writeCounts(&b, sm.Done, sm.Cancels-cancels)
		cancels = sm.Cancels
	}
	b.WriteString("| total | | | | | |")
	writeCounts(&b, r.Totals, cancels)
	fmt.Fprintf(&b, "\nVerdict: %s\n", r.Verdict)
	if len(r.Errors) > 0 {
		b.WriteString("\nUnexpected errors:\n\n| kind | count | error |\n|---|--:|---|\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "| %s | %d | %s |\n", e.Kind, e.Count, strings.ReplaceAll(e.Text, "|", "\\|"))
		}
	}
	return b.String()
}

func writeCounts(b *strings.Builder, t Totals, cancels int64) {
	for _, k := range tableKinds {
		fmt.Fprintf(b, " %d |", t.OK[k])
	}
	fmt.Fprintf(b, " %d | %d | %d | %d | %d |\n", kills(t), t.OK[KindConnect], cancels, Sum(t.Expected), Sum(t.Unexpected))
}

// kills counts finished kill kinds.
func kills(t Totals) int64 {
	var n int64
	for k := range numKinds {
		if k.IsKill() {
			n += t.OK[k] + t.Expected[k]
		}
	}
	return n
}

// ProgressLine is one sample for the console.
func ProgressLine(sm Sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s rss %s MiB hwm %s heap %s MiB goroutines %d fds %d |", at(sm),
		mibNum(sm.RSS), mibNum(sm.HWM), mibNum(sm.Heap), sm.Goroutines, sm.FDs)
	for _, k := range tableKinds {
		fmt.Fprintf(&b, " %s %d", k, sm.Done.OK[k])
	}
	fmt.Fprintf(&b, " | kills %d logins %d cancels(total) %d expected %d unexpected %d", kills(sm.Done), sm.Done.OK[KindConnect],
		sm.Cancels, Sum(sm.Done.Expected), Sum(sm.Done.Unexpected))
	return b.String()
}

// at is a sample's time for the table.
func at(sm Sample) string {
	if sm.Stopped {
		return clock(sm.At) + " stopped"
	}
	return clock(sm.At)
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%02d:%02d", int(d/time.Minute), int(d%time.Minute/time.Second))
}

func mibNum(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
