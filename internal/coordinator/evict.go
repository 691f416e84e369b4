package coordinator

import (
	"cmp"
	"slices"
)

// Donor is an eviction candidate as ranked by RankDonors.
type Donor struct {
	User  string
	Load  Load
	Spare int // Load.Total minus the user's effective minimum
	idx   int // position in the caller's list
}

// RankDonors drops the pools that cannot give a connection (no idle one,
// or no spare above the effective minimum) and orders the rest: highest
// cached p95 transaction time first, then most spare, then by name so the
// order is deterministic. Slow pools give first because a reconnect costs
// them relatively least.
func RankDonors(ds []Donor) []Donor {
	out := make([]Donor, 0, len(ds))
	for _, d := range ds {
		if d.Load.Idle > 0 && d.Spare > 0 {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b Donor) int {
		if c := cmp.Compare(b.Load.P95, a.Load.P95); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Spare, a.Spare); c != 0 {
			return c
		}
		return cmp.Compare(a.User, b.User)
	})
	return out
}

// evict closes one idle connection of the best donor other than u and then
// tries to take the freed slot. The permit is nil if nothing could be
// evicted or if a parked waiter got the slot first (a lost race moves the
// caller on to the next phase, as the spec says).
func (u *User) evict(ph Phase) *Permit {
	c := u.c
	c.mu.Lock()
	others := make([]*User, 0, len(c.users))
	for _, x := range c.users {
		if x != u {
			others = append(others, x)
		}
	}
	c.mu.Unlock()

	ds := make([]Donor, 0, len(others))
	for i, x := range others {
		l := x.m.Load()
		ds = append(ds, Donor{User: x.name, Load: l, Spare: l.Total - x.EffectiveMin(), idx: i})
	}
	for _, d := range RankDonors(ds) {
		x := others[d.idx]
		if !x.m.EvictIdle(c.cfg.MinConnectionLifetime, x.EffectiveMin()) {
			continue
		}
		c.mu.Lock()
		c.counters.Evictions++
		p := c.tryLocked(u, ph, true)
		c.mu.Unlock()
		return p
	}
	return nil
}
