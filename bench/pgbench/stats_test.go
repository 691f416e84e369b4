package pgbench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	hundred := make([]int64, 100)
	for i := range hundred {
		hundred[i] = int64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []int64
		p      float64
		want   int64
	}{
		{name: "empty", sorted: nil, p: 50, want: 0},
		{name: "one sample", sorted: []int64{7}, p: 99, want: 7},
		{name: "p50 of 1..100", sorted: hundred, p: 50, want: 50},
		{name: "p95 of 1..100", sorted: hundred, p: 95, want: 95},
		{name: "p99 of 1..100", sorted: hundred, p: 99, want: 99},
		{name: "p100 is the max", sorted: hundred, p: 100, want: 100},
		{name: "tiny p is the min", sorted: hundred, p: 0.001, want: 1},
		{name: "p50 of four rounds up the rank", sorted: []int64{10, 20, 30, 40}, p: 50, want: 20},
		{name: "p99 of four is the max", sorted: []int64{10, 20, 30, 40}, p: 99, want: 40},
		{name: "p51 of four", sorted: []int64{10, 20, 30, 40}, p: 51, want: 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Percentile(tt.sorted, tt.p))
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	samples := make([]int64, 0, 1000)
	for i := 1000; i >= 1; i-- { // reversed: Summarize must sort
		samples = append(samples, int64(i))
	}
	l := Summarize(samples)
	require.Equal(t, Latency{N: 1000, P50: 500 * time.Microsecond, P95: 950 * time.Microsecond, P99: 990 * time.Microsecond}, l)
	require.InDelta(t, 1.98, l.Ratio99to50(), 1e-9)
	require.Zero(t, Latency{}.Ratio99to50())
}

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{name: "none", xs: nil, want: 0},
		{name: "odd", xs: []float64{3, 1, 2}, want: 2},
		{name: "even", xs: []float64{4, 1, 3, 2}, want: 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := append([]float64(nil), tt.xs...)
			require.Equal(t, tt.want, Median(tt.xs))
			require.Equal(t, in, tt.xs, "Median must not reorder its input")
		})
	}
}
