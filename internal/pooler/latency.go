package pooler

import (
	"math"
	"sync/atomic"
	"time"
)

// Histogram is a lock-free log-scale latency histogram: 8 buckets per
// power of two from 1 µs to about 1 hour, so a quantile is within ~9 %.
// Observe is one atomic add on the hot path.
type Histogram struct {
	buckets [histBuckets]atomic.Uint64
}

const (
	histSub     = 8 // buckets per power of two
	histBuckets = 32 * histSub
)

// bucketOf is floor(log2(us) × histSub), capped at the last bucket, without
// a logarithm: the binary exponent of us gives the power of two, and its
// mantissa compared with 2^(k/histSub) the bucket within it (Observe runs
// twice per transaction).
func bucketOf(us float64) int {
	if us < 1 {
		return 0
	}
	bits := math.Float64bits(us)
	exp := int(bits>>52&0x7ff) - 1023
	if exp >= histBuckets/histSub {
		return histBuckets - 1
	}
	mant := bits & (1<<52 - 1)
	sub := 0
	for sub < histSub-1 && mant >= subBounds[sub] {
		sub++
	}
	return exp*histSub + sub
}

// subBounds[k] is the mantissa of 2^((k+1)/histSub): where bucket k+1 of a
// power of two starts.
var subBounds = func() (b [histSub - 1]uint64) {
	for k := range b {
		b[k] = math.Float64bits(math.Exp2(float64(k+1)/histSub)) & (1<<52 - 1)
	}
	return b
}()

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	h.buckets[bucketOf(float64(d)/float64(time.Microsecond))].Add(1)
}

// Quantile returns the q-quantile (0 < q ≤ 1) of what was observed, 0 when
// empty. The value is the upper bound of its bucket.
func (h *Histogram) Quantile(q float64) time.Duration {
	var counts [histBuckets]uint64
	var total uint64
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return time.Duration(math.Exp2(float64(i+1)/histSub) * float64(time.Microsecond))
		}
	}
	return 0
}

// Reset forgets everything (reload, RECONNECT).
func (h *Histogram) Reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
}

// cachedQuantile recomputes a quantile at most once per interval, for the
// pool's acquire path.
type cachedQuantile struct {
	h     *Histogram
	q     float64
	value atomic.Int64
	at    atomic.Int64 // unix nanos of the last computation
}

func (c *cachedQuantile) get() time.Duration {
	now := time.Now().UnixNano()
	if now-c.at.Load() > int64(time.Second) {
		c.at.Store(now)
		c.value.Store(int64(c.h.Quantile(c.q)))
	}
	return time.Duration(c.value.Load())
}
