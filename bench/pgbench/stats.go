package pgbench

import (
	"math"
	"slices"
	"time"
)

// Latency is the distribution of transaction times of one or more runs.
type Latency struct {
	N             int
	P50, P95, P99 time.Duration
}

// Ratio99to50 is p99/p50, the tail spread; 0 when p50 is 0.
func (l Latency) Ratio99to50() float64 {
	if l.P50 == 0 {
		return 0
	}
	return float64(l.P99) / float64(l.P50)
}

// Summarize sorts samples (µs) in place and returns their percentiles.
func Summarize(samples []int64) Latency {
	slices.Sort(samples)
	us := func(p float64) time.Duration { return time.Duration(Percentile(samples, p)) * time.Microsecond }
	return Latency{N: len(samples), P50: us(50), P95: us(95), P99: us(99)}
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample such that at least p percent of
// the samples are less than or equal to it. It returns 0 for no samples.
func Percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}
