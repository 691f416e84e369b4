package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRender(t *testing.T) {
	t.Parallel()
	s := DefaultSettings()
	var minute Totals
	minute.OK[KindSelect], minute.OK[KindConnect], minute.OK[KindKillIdle] = 1000, 7, 2
	minute.Expected[KindKillInTx], minute.Unexpected[KindTPCB] = 3, 1
	smp := []Sample{
		{At: 0, RSS: 14 * mb, HWM: 14 * mb, Heap: 2 * mb, Goroutines: 13, FDs: 13},
		{At: time.Minute, RSS: 60 * mb, HWM: 70 * mb, Heap: 30 * mb, Goroutines: 812, FDs: 450, Cancels: 5, Done: minute},
		{At: 2*time.Minute + 500*time.Millisecond, RSS: 61 * mb, HWM: 70 * mb, Heap: 31 * mb, Goroutines: 810, FDs: 449, Cancels: 9, Done: minute, Stopped: true},
	}
	rep := Report{Settings: s, Commit: "abc123", Postgres: "PostgreSQL 15", Elapsed: 2 * time.Minute, Samples: smp,
		Totals: minute, Errors: []ErrorText{{Kind: KindTPCB, Text: "a | b", Count: 1}},
		Verdict: Judge(smp, time.Minute, 0.05, 4*mb, 1, true)}
	out := Render(rep)
	lines := strings.Split(out, "\n")
	var header, sep string
	for i, l := range lines {
		if strings.HasPrefix(l, "| at |") {
			header, sep = l, lines[i+1]
		}
	}
	require.Equal(t, strings.Count(header, "|"), strings.Count(sep, "|"), "separator matches the header")
	require.Contains(t, out, "| 00:00 | 14.0 | 14.0 | 2.0 | 13 | 13 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |\n")
	// kills = 2 done + 3 that provoked their error; cancels per interval from the cumulative counter
	require.Contains(t, out, "| 01:00 | 60.0 | 70.0 | 30.0 | 812 | 450 | 1000 | 0 | 0 | 0 | 0 | 0 | 5 | 7 | 5 | 3 | 1 |\n")
	require.Contains(t, out, "| 02:01 stopped | 61.0 |")
	require.Contains(t, out, "| 5 | 7 | 4 | 3 | 1 |\n| total |")
	require.Contains(t, out, "| total | | | | | | 1000 | 0 | 0 | 0 | 0 | 0 | 5 | 7 | 9 | 3 | 1 |\n")
	require.Contains(t, out, "Verdict: FAIL: 1 unexpected errors; 1 samples after the 1m0s warm-up, need 2")
	require.Contains(t, out, "| tpcb | 1 | a \\| b |")
	require.Contains(t, out, "commit abc123")
	rows := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "| 0") || strings.HasPrefix(l, "| total") {
			require.Equal(t, strings.Count(header, "|"), strings.Count(l, "|"), l)
			rows++
		}
	}
	require.Equal(t, len(smp)+1, rows)
}
