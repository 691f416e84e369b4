package memlimit

import (
	"sync/atomic"
	"time"
)

// Budget is a byte budget shared by every session of a process. The zero
// value has no limit.
type Budget struct {
	limit    atomic.Int64 // <= 0: unlimited
	used     atomic.Int64
	peak     atomic.Int64
	refusals atomic.Uint64
	lastLog  atomic.Int64  // UnixNano of the last refusal log line
	logged   atomic.Uint64 // refusals counted at the last log line
}

// New returns a budget of limit bytes (<= 0: unlimited).
func New(limit int64) *Budget {
	b := &Budget{}
	b.limit.Store(limit)
	return b
}

// SetLimit changes the limit (reload). Bytes already held stay held.
func (b *Budget) SetLimit(limit int64) { b.limit.Store(limit) }

// Limit is the current limit, <= 0 for none.
func (b *Budget) Limit() int64 { return b.limit.Load() }

// TryAcquire takes n bytes if they fit under the limit and reports whether
// it did. A refusal is counted (Refusals). n <= 0 always succeeds.
func (b *Budget) TryAcquire(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	limit := b.limit.Load()
	for {
		used := b.used.Load()
		if limit > 0 && used+n > limit {
			b.refusals.Add(1)
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			b.notePeak(used + n)
			return true
		}
	}
}

// Release gives back n bytes taken by TryAcquire.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	if b.used.Add(-n) < 0 {
		panic("BUG: memlimit: released more bytes than acquired")
	}
}

func (b *Budget) notePeak(v int64) {
	for {
		p := b.peak.Load()
		if v <= p || b.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// Used is the number of bytes held now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Peak is the largest number of bytes held at once since start.
func (b *Budget) Peak() int64 { return b.peak.Load() }

// Refusals counts TryAcquire calls that did not fit.
func (b *Budget) Refusals() uint64 { return b.refusals.Load() }

// Account tracks the bytes one buffer holds against a Budget: Resize moves
// the difference between the buffer's old and new size. An Account is owned
// by the goroutine that owns the buffer. A nil Budget makes every call
// succeed.
type Account struct {
	b    *Budget
	held int64
}

// NewAccount returns an account on b holding nothing.
func NewAccount(b *Budget) Account { return Account{b: b} }

// Grow asks for room for a buffer of size bytes in all. It reports false,
// holding what it held before, when the budget cannot cover the increase.
func (a *Account) Grow(size int64) bool {
	if size <= a.held {
		return true
	}
	if !a.b.TryAcquire(size - a.held) {
		return false
	}
	a.held = size
	return true
}

// Set records that the buffer now has size bytes, giving back what it no
// longer holds (a buffer that shrank) or taking what it grew by without a
// limit check (the growth happened already: better to count it than lose
// track of it).
func (a *Account) Set(size int64) {
	switch {
	case size < a.held:
		a.b.Release(a.held - size)
	case size > a.held && a.b != nil:
		a.b.used.Add(size - a.held)
		a.b.notePeak(a.b.used.Load())
	}
	a.held = size
}

// Held is the number of bytes the account holds.
func (a *Account) Held() int64 { return a.held }

// LogDue rate-limits the log line about refusals to one a second for the
// process: it reports whether a line is due at now and how many refusals
// happened since the last line beyond the one being logged.
func (b *Budget) LogDue(now time.Time) (suppressed uint64, due bool) {
	last := b.lastLog.Load()
	if now.UnixNano()-last < int64(time.Second) || !b.lastLog.CompareAndSwap(last, now.UnixNano()) {
		return 0, false
	}
	total := b.refusals.Load()
	prev := b.logged.Swap(total)
	if total > prev {
		return total - prev - 1, true
	}
	return 0, true
}
