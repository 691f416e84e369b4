package fallback

import "time"

// WarnInterval is the minimum gap between two "<host>:<port> rejected"
// WARN lines of one (pool, host, port); lines in between go to DEBUG.
const WarnInterval = 10 * time.Second

// warnLimiter decides which rejection lines are WARN. The Dialer is per
// pool, so the key is the address. Not safe for concurrent use.
type warnLimiter struct {
	last map[string]time.Time
}

// allow reports whether addr may log a WARN at now, and records it if so.
// Entries older than WarnInterval are dropped on the way (lazy cleanup).
func (l *warnLimiter) allow(addr string, now time.Time) bool {
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	if t, ok := l.last[addr]; ok && now.Sub(t) < WarnInterval {
		return false
	}
	for a, t := range l.last {
		if now.Sub(t) >= WarnInterval {
			delete(l.last, a)
		}
	}
	l.last[addr] = now
	return true
}
