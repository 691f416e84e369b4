package patronitest

import (
	"sync"
	"time"

	"github.com/doorman-go/doorman/internal/patroni"
)

// ManualClock is a patroni.Clock whose time moves only by Advance. Its
// tickers, like time.Ticker, hold at most one pending tick.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*manualTicker
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker returns a ticker firing every d of manual time.
func (c *ManualClock) NewTicker(d time.Duration) patroni.Ticker {
	if d <= 0 {
		panic("BUG: non-positive ticker interval")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTicker{clock: c, period: d, next: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.tickers = append(c.tickers, t)
	return t
}

// Tickers returns how many tickers are active (to wait until a Watcher has
// started before advancing).
func (c *ManualClock) Tickers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers)
}

// Advance moves time forward by d and fires every ticker that became due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		for !t.next.After(c.now) {
			select {
			case t.ch <- t.next:
			default: // a tick is already pending: drop, like time.Ticker
			}
			t.next = t.next.Add(t.period)
		}
	}
}

type manualTicker struct {
	clock  *ManualClock
	period time.Duration
	next   time.Time
	ch     chan time.Time
}

func (t *manualTicker) C() <-chan time.Time { return t.ch }

func (t *manualTicker) Stop() {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.tickers {
		if x == t {
			c.tickers = append(c.tickers[:i], c.tickers[i+1:]...)
			return
		}
	}
}
