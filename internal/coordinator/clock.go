package coordinator

import "time"

// Clock is the source of timers for the wait phase. It is injected so that
// tests can drive reserve_pool_timeout without sleeping.
type Clock interface {
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the coordinator uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// SystemClock is the real clock.
type SystemClock struct{}

// NewTimer starts a real timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time { return s.t.C }
func (s systemTimer) Stop() bool          { return s.t.Stop() }
