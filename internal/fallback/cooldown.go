package fallback

import "time"

// MaxHostCooldown caps the per-host cooldown.
const MaxHostCooldown = 60 * time.Second

// hostCooldown is one candidate's failure streak.
type hostCooldown struct {
	failures int
	until    time.Time
}

// cooldowns is the per-host cooldown table. A failure puts the host out of
// discovery for base·2^(streak-1), capped at MaxHostCooldown; the streak
// counts failures with no success in between. Entries are cleaned lazily by
// prune (at every discovery): an expired host is a candidate again at once,
// and its entry is dropped once it has stayed expired for a further
// MaxHostCooldown, so the next failure after that starts again from base.
// A success drops the entry. Not safe for concurrent use: the Dialer locks.
type cooldowns struct {
	base    time.Duration
	entries map[string]*hostCooldown
}

func newCooldowns(base time.Duration) *cooldowns {
	return &cooldowns{base: base, entries: map[string]*hostCooldown{}}
}

// fail records a failure of addr at now and returns its new cooldown.
func (c *cooldowns) fail(addr string, now time.Time) time.Duration {
	e := c.entries[addr]
	if e == nil {
		e = &hostCooldown{}
		c.entries[addr] = e
	}
	e.failures++
	d := backoff(c.base, e.failures)
	if until := now.Add(d); until.After(e.until) {
		e.until = until
	}
	return d
}

// backoff is base doubled per failure after the first, capped.
func backoff(base time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < MaxHostCooldown; i++ {
		d *= 2
	}
	return min(d, MaxHostCooldown)
}

// succeed forgets addr's streak.
func (c *cooldowns) succeed(addr string) { delete(c.entries, addr) }

// blocked reports whether addr is in its cooldown at now.
func (c *cooldowns) blocked(addr string, now time.Time) bool {
	e := c.entries[addr]
	return e != nil && now.Before(e.until)
}

// prune drops entries that have been expired for MaxHostCooldown.
func (c *cooldowns) prune(now time.Time) {
	for a, e := range c.entries {
		if !now.Before(e.until.Add(MaxHostCooldown)) {
			delete(c.entries, a)
		}
	}
}
