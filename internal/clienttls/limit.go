package clienttls

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrQueueTimeout is returned by Limiter.Wait when the caller's deadline
// comes before its handshake slot.
var ErrQueueTimeout = errors.New("tls handshake queue: deadline before the slot")

// Limiter is tls_rate_limit_per_second: handshakes start at most rate per
// second, evenly spaced, in the order the clients asked (a queue). There is
// no burst: after a quiet spell the first handshake starts at once and the
// next one 1/rate later. A client whose deadline comes before its slot is
// refused at once; its slot is not given back (the queue behind it keeps
// its order and the rate is never exceeded).
type Limiter struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	next time.Time // start of the next free slot
}

// NewLimiter allows rate handshakes per second; now nil means time.Now.
func NewLimiter(rate int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{interval: time.Second / time.Duration(rate), now: now}
}

// reserve takes the next slot and returns how long until it starts.
func (l *Limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.next.Before(now) {
		l.next = now
	}
	d := l.next.Sub(now)
	l.next = l.next.Add(l.interval)
	return d
}

// Wait blocks until the caller's slot, or fails with ErrQueueTimeout when
// ctx's deadline is earlier, or with ctx's error when it ends first.
func (l *Limiter) Wait(ctx context.Context) error {
	d := l.reserve()
	if d <= 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && deadline.Sub(l.now()) < d {
		return ErrQueueTimeout
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
