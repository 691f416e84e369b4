package coordtest

import (
	"sync"
	"time"

	"github.com/doorman-go/doorman/internal/coordinator"
)

// Clock is a manual clock. A timer of zero or negative duration has fired
// by the time NewTimer returns.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*Timer
}

// NewClock starts at a fixed instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now is the current fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer implements coordinator.Clock.
func (c *Clock) NewTimer(d time.Duration) coordinator.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &Timer{clk: c, when: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.fired = true
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves time forward and fires the timers that are due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.when.After(c.now) {
			t.fired = true
			t.ch <- c.now
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
}

// Pending is the number of timers that have neither fired nor stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Timer is a timer of Clock.
type Timer struct {
	clk   *Clock
	when  time.Time
	ch    chan time.Time
	fired bool // guarded by clk.mu
}

// C implements coordinator.Timer.
func (t *Timer) C() <-chan time.Time { return t.ch }

// Stop implements coordinator.Timer.
func (t *Timer) Stop() bool {
	c := t.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.fired {
		return false
	}
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}
