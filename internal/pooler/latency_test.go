package pooler

import (
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
