package soak

import (
	"fmt"
	"time"
)

// Verdict is the soak's pass or fail. RSS is judged on the samples taken at
// or after the warm-up and before the workers stopped: the spread (max -
// min) / min must stay within the tolerance, or max - min within the slack.
// The spread is stricter than last vs first: it also fails a run whose RSS
// rose and fell back. The slack is there for a small RSS, where a fraction
// of it is less than what the heap of 400 busy clients moves between two
// samples with nothing leaking (docs/benchmarks.md, "Soak").
type Verdict struct {
	Pass       bool
	Unexpected int64   // unexpected errors of the whole run, logins included
	Judged     int     // samples at or after the warm-up
	RSSMin     int64   // over the judged samples
	RSSMax     int64   // over the judged samples
	Spread     float64 // (RSSMax - RSSMin) / RSSMin
	Reasons    []string
}

// minJudged is the fewest samples after warm-up that can show a trend.
const minJudged = 2

// Judge decides the verdict; complete is false when the run was cut short.
func Judge(samples []Sample, warmup time.Duration, tolerance float64, slack int64, unexpected int64, complete bool) Verdict {
	v := Verdict{Unexpected: unexpected}
	for _, s := range samples {
		if s.At <= 0 || s.At < warmup || s.Stopped {
			continue
		}
		if v.Judged == 0 || s.RSS < v.RSSMin {
			v.RSSMin = s.RSS
		}
		v.RSSMax = max(v.RSSMax, s.RSS)
		v.Judged++
	}
	if v.RSSMin > 0 {
		v.Spread = float64(v.RSSMax-v.RSSMin) / float64(v.RSSMin)
	}
	if unexpected > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d unexpected errors", unexpected))
	}
	switch {
	case v.Judged < minJudged:
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d samples after the %s warm-up, need %d", v.Judged, warmup, minJudged))
	case v.Spread > tolerance && v.RSSMax-v.RSSMin > slack:
		v.Reasons = append(v.Reasons, fmt.Sprintf("RSS after warm-up moved %.1f%% (%s to %s), more than %.1f%% and more than %s",
			100*v.Spread, mib(v.RSSMin), mib(v.RSSMax), 100*tolerance, mib(slack)))
	}
	if !complete {
		v.Reasons = append(v.Reasons, "the run was interrupted")
	}
	v.Pass = len(v.Reasons) == 0
	return v
}

// String is the verdict in one line.
func (v Verdict) String() string {
	if v.Pass {
		return fmt.Sprintf("PASS: 0 unexpected errors; RSS after warm-up within %.1f%% (%s to %s, %s apart, over %d samples)",
			100*v.Spread, mib(v.RSSMin), mib(v.RSSMax), mib(v.RSSMax-v.RSSMin), v.Judged)
	}
	s := "FAIL:"
	for i, r := range v.Reasons {
		if i > 0 {
			s += ";"
		}
		s += " " + r
	}
	return s
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
