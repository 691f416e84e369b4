package drill

import "time"

// Backoff is seed 003's retry delay d_n = min(d_max, d_0·2^n)·J with J
// drawn uniformly from [JitterLow, JitterHigh]. The zero value is not
// useful; DefaultBackoff is the seed's example.
type Backoff struct {
	Base       time.Duration // d_0
	Max        time.Duration // d_max
	JitterLow  float64       // lower bound of J, e.g. 0.75
	JitterHigh float64       // upper bound of J, e.g. 1.25
}

// DefaultBackoff: 50 ms doubling to at most 1 s, J in [0.75, 1.25].
var DefaultBackoff = Backoff{Base: 50 * time.Millisecond, Max: time.Second, JitterLow: 0.75, JitterHigh: 1.25}

// Delay is the wait after the n-th consecutive failure (n from 0); r is a
// uniform random number in [0, 1) supplied by the caller so that the
// formula stays a pure function.
func (b Backoff) Delay(n int, r float64) time.Duration {
	d := b.Max
	if n < 0 {
		n = 0
	}
	// Double without overflowing: stop as soon as the cap is reached.
	if b.Base < b.Max {
		d = b.Base
		for i := 0; i < n && d < b.Max; i++ {
			d *= 2
		}
		d = min(d, b.Max)
	}
	j := b.JitterLow + (b.JitterHigh-b.JitterLow)*r
	return time.Duration(float64(d) * j)
}
