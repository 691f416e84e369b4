package pooler

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	require.Zero(t, h.Quantile(0.99))
	for i := 1; i <= 1000; i++ {
		h.Observe(time.Duration(i) * time.Millisecond)
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.9, 900 * time.Millisecond}, {0.99, 990 * time.Millisecond}}
	for _, tt := range tests {
		got := h.Quantile(tt.q)
		require.InEpsilon(t, float64(tt.want), float64(got), 0.1, "q=%v got %v", tt.q, got)
		require.GreaterOrEqual(t, got, tt.want, "upper bound of the bucket")
	}
	h.Reset()
	require.Zero(t, h.Quantile(0.5))
	h.Observe(0)
	h.Observe(100 * time.Hour) // clamps into the last bucket
	require.Greater(t, h.Quantile(1), time.Hour)
}

// bucketOf is floor(log2(us) × 8), capped, as the logarithm would give it:
// every whole µs up to 2^20, random values across the whole range, the
// bucket bounds themselves and the ends. Only a value within rounding of a
// bucket bound may land on either side of it.
func TestBucketOfMatchesLog2(t *testing.T) {
	ref := func(us float64) (int, bool) {
		if us < 1 {
			return 0, true
		}
		x := math.Log2(us) * histSub
		exact := math.Abs(x-math.Round(x)) > 1e-9
		return min(int(x), histBuckets-1), exact
	}
	check := func(us float64) {
		t.Helper()
		want, exact := ref(us)
		got := bucketOf(us)
		if got != want && (exact || got-want > 1 || want-got > 1) {
			t.Fatalf("bucketOf(%v) = %d, log2 gives %d", us, got, want)
		}
	}
	for us := 0.0; us <= 1<<20; us++ {
		check(us)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		check(math.Exp2(r.Float64() * 34))
	}
	for k := 0; k <= histBuckets+8; k++ {
		b := math.Exp2(float64(k) / histSub)
		check(b)
		check(math.Nextafter(b, 0))
		check(math.Nextafter(b, math.Inf(1)))
	}
	for _, us := range []float64{0, 0.5, math.Nextafter(1, 0), 1, 3.6e9, 1e12, math.MaxFloat64} {
		check(us)
	}
	require.Equal(t, histBuckets-1, bucketOf(math.Inf(1)))
}
