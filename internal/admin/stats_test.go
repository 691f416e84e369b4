package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestComputeStats(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name      string
		cur, base sample
		want      []statsRow
	}{
		{"rates and averages over the window",
			sample{at: t0.Add(10 * time.Second), dbs: map[string]counters{
				"db": {Xacts: 120, Queries: 220, Received: 10100, Sent: 20100, XactTime: 5000 + 100*40, QueryTime: 3000 + 200*20, WaitTime: 600, Waits: 13},
			}},
			sample{at: t0, dbs: map[string]counters{
				"db": {Xacts: 20, Queries: 20, Received: 100, Sent: 100, XactTime: 5000, QueryTime: 3000, WaitTime: 0, Waits: 10},
			}},
			[]statsRow{{Database: "db",
				Total:    counters{Xacts: 120, Queries: 220, Received: 10100, Sent: 20100, XactTime: 9000, QueryTime: 7000, WaitTime: 600, Waits: 13},
				AvgXacts: 10, AvgQueries: 20, AvgRecv: 1000, AvgSent: 2000,
				AvgXactTime: 40, AvgQueryTime: 20, AvgWaitTime: 200}}},
		{"new database and sorted output",
			sample{at: t0.Add(2 * time.Second), dbs: map[string]counters{"b": {Xacts: 4}, "a": {}}},
			sample{at: t0},
			[]statsRow{{Database: "a"}, {Database: "b", Total: counters{Xacts: 4}, AvgXacts: 2}}},
		{"counter went backwards counts from zero",
			sample{at: t0.Add(time.Second), dbs: map[string]counters{"db": {Xacts: 3, XactTime: 30}}},
			sample{at: t0, dbs: map[string]counters{"db": {Xacts: 100, XactTime: 100}}},
			[]statsRow{{Database: "db", Total: counters{Xacts: 3, XactTime: 30}, AvgXacts: 3, AvgXactTime: 10}}},
		{"window under a second counts as one second",
			sample{at: t0.Add(time.Millisecond), dbs: map[string]counters{"db": {Queries: 5}}},
			sample{at: t0},
			[]statsRow{{Database: "db", Total: counters{Queries: 5}, AvgQueries: 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, computeStats(tt.cur, tt.base))
		})
	}
}

func TestStatsSamplerBaseline(t *testing.T) {
	t.Parallel()
	start := time.Unix(0, 0)
	at := func(s int) sample { return sample{at: start.Add(time.Duration(s) * time.Second)} }
	var s statsSampler
	steps := []struct {
		now  int
		base int // seconds after start of the expected baseline
	}{
		{5, 0},   // first call: daemon start
		{10, 0},  // no sample old enough yet
		{20, 5},  // 15 s after the sample at 5: it becomes the baseline
		{30, 5},  // the sample at 20 is not 15 s old
		{35, 20}, //
		{36, 20},
	}
	for _, st := range steps {
		got := s.baseline(at(st.now), start)
		require.Equal(t, at(st.base).at, got.at, "at %d s", st.now)
	}
}

func TestSumByDatabase(t *testing.T) {
	t.Parallel()
	got := sumByDatabase([]poolSnap{
		{Database: "a", Counters: counters{Xacts: 1, Waits: 2}},
		{Database: "a", Counters: counters{Xacts: 10, Sent: 5}},
		{Database: "b", Counters: counters{Queries: 7}},
	})
	require.Equal(t, map[string]counters{"a": {Xacts: 11, Sent: 5, Waits: 2}, "b": {Queries: 7}}, got)
}
