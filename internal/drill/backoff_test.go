package drill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	b := Backoff{Base: 50 * ms, Max: time.Second, JitterLow: 0.75, JitterHigh: 1.25}
	cases := []struct {
		name string
		b    Backoff
		n    int
		r    float64
		want time.Duration
	}{
		{"first failure, no jitter", b, 0, 0.5, 50 * ms},
		{"first failure, lowest jitter", b, 0, 0, 37500 * time.Microsecond},
		{"doubles", b, 1, 0.5, 100 * ms},
		{"doubles again", b, 3, 0.5, 400 * ms},
		{"capped at max", b, 5, 0.5, time.Second},
		{"cap then jitter high", b, 5, 1, 1250 * ms},
		{"huge n does not overflow", b, 1 << 20, 0.5, time.Second},
		{"negative n is the first failure", b, -3, 0.5, 50 * ms},
		{"base above max uses max", Backoff{Base: 2 * time.Second, Max: time.Second, JitterLow: 1, JitterHigh: 1}, 0, 0.3, time.Second},
		{"no jitter range", Backoff{Base: 10 * ms, Max: 80 * ms, JitterLow: 1, JitterHigh: 1}, 2, 0.9, 40 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.b.Delay(tc.n, tc.r))
		})
	}
}

func TestBackoffJitterBounds(t *testing.T) {
	t.Parallel()
	for n := range 8 {
		for _, r := range []float64{0, 0.25, 0.5, 0.999} {
			d := DefaultBackoff.Delay(n, r)
			base := min(DefaultBackoff.Base<<n, DefaultBackoff.Max)
			require.GreaterOrEqual(t, d, time.Duration(float64(base)*0.75), "n=%d r=%v", n, r)
			require.LessOrEqual(t, d, time.Duration(float64(base)*1.25), "n=%d r=%v", n, r)
		}
	}
}
