package soak

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const mb = 1 << 20

// samples builds one sample per minute from 0 with the given RSS in MiB.
func samples(rssMiB ...float64) []Sample {
	out := make([]Sample, len(rssMiB))
	for i, r := range rssMiB {
		out[i] = Sample{At: time.Duration(i) * time.Minute, RSS: int64(r * mb)}
	}
	return out
}

func TestJudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		samples    []Sample
		warmup     time.Duration
		slack      float64 // MiB
		unexpected int64
		complete   bool
		pass       bool
		spread     float64
		judged     int
		reason     string
	}{
		{"flat after warm-up", samples(14, 80, 60, 61, 62, 61.5), 2 * time.Minute, 0, 0, true, true, 2.0 / 60, 4, ""},
		{"warm-up growth is ignored", samples(14, 40, 90, 50, 50, 50), 3 * time.Minute, 0, 0, true, true, 0, 3, ""},
		{"exactly at the tolerance passes", samples(14, 100, 100, 105), time.Minute, 0, 0, true, true, 0.05, 3, ""},
		{"growth fails", samples(14, 60, 60, 61, 63, 66), 2 * time.Minute, 0, 0, true, false, 0.1, 4, "RSS after warm-up moved 10.0%"},
		{"rise and fall fails", samples(14, 60, 70, 60), time.Minute, 0, 0, true, false, 10.0 / 60, 3, "more than 5.0%"},
		{"unexpected errors fail", samples(14, 60, 60, 60), time.Minute, 0, 3, true, false, 0, 3, "3 unexpected errors"},
		{"too few samples fail", samples(14, 60, 60), 2 * time.Minute, 0, 0, true, false, 0, 1, "1 samples after the 2m0s warm-up, need 2"},
		{"baseline never judged", samples(14, 60), 0, 0, 0, true, false, 0, 1, "need 2"},
		{"stopped sample not judged", append(samples(14, 60, 60), Sample{At: 3 * time.Minute, RSS: 30 * mb, Stopped: true}), time.Minute, 0, 0, true, true, 0, 2, ""},
		{"a small RSS moves within the slack", samples(14, 27, 26, 28, 27.5), time.Minute, 4, 0, true, true, 2.0 / 26, 4, ""},
		{"exactly at the slack passes", samples(14, 20, 24, 22), time.Minute, 4, 0, true, true, 4.0 / 20, 3, ""},
		{"beyond the slack and the fraction fails", samples(14, 20, 22, 24.5), time.Minute, 4, 0, true, false, 4.5 / 20, 3, "more than 5.0% and more than 4.0 MiB"},
		{"the fraction passes a large RSS beyond the slack", samples(14, 100, 104.5, 102), time.Minute, 4, 0, true, true, 0.045, 3, ""},
		{"interrupted fails", samples(14, 60, 60, 60), time.Minute, 0, 0, false, false, 0, 3, "interrupted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := Judge(tc.samples, tc.warmup, 0.05, int64(tc.slack*mb), tc.unexpected, tc.complete)
			require.Equal(t, tc.pass, v.Pass, v.String())
			require.Equal(t, tc.judged, v.Judged)
			require.InDelta(t, tc.spread, v.Spread, 1e-9)
			require.Equal(t, tc.unexpected, v.Unexpected)
			if tc.pass {
				require.Empty(t, v.Reasons)
				require.Contains(t, v.String(), "PASS")
			} else {
				require.Contains(t, v.String(), "FAIL")
				require.Contains(t, v.String(), tc.reason)
			}
		})
	}
}

func TestSampleTimes(t *testing.T) {
	t.Parallel()
	m := time.Minute
	tests := []struct {
		name               string
		duration, interval time.Duration
		want               []time.Duration
	}{
		{"whole minutes", 3 * m, m, []time.Duration{m, 2 * m, 3 * m}},
		{"a partial last interval", 150 * time.Second, m, []time.Duration{m, 2 * m, 150 * time.Second}},
		{"one interval", m, m, []time.Duration{m}},
		{"shorter than an interval", 30 * time.Second, m, []time.Duration{30 * time.Second}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, sampleTimes(tc.duration, tc.interval), tc.name)
	}
}
