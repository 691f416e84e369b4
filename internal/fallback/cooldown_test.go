package fallback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		base     time.Duration
		failures int
		want     time.Duration
	}{
		{"first failure is the base", 5 * time.Second, 1, 5 * time.Second},
		{"second doubles", 5 * time.Second, 2, 10 * time.Second},
		{"fourth", 5 * time.Second, 4, 40 * time.Second},
		{"fifth is capped", 5 * time.Second, 5, MaxHostCooldown},
		{"long streak stays capped", 5 * time.Second, 1000, MaxHostCooldown},
		{"base above the cap is capped", 90 * time.Second, 1, MaxHostCooldown},
		{"small base", 100 * time.Millisecond, 3, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, backoff(tt.base, tt.failures))
		})
	}
}

func TestCooldownsStreak(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	c := newCooldowns(5 * time.Second)
	const a = "10.0.0.2:5432"

	require.False(t, c.blocked(a, t0))
	now := t0
	for _, want := range []time.Duration{5, 10, 20, 40, 60, 60} {
		got := c.fail(a, now)
		require.Equal(t, want*time.Second, got)
		require.True(t, c.blocked(a, now.Add(got-time.Millisecond)))
		require.False(t, c.blocked(a, now.Add(got)), "expired exactly at the end of the window")
		now = now.Add(got) // the host is a candidate again and fails again
		c.prune(now)       // discovery's lazy cleanup keeps a just-expired streak
	}

	// A success forgets the streak.
	c.succeed(a)
	require.Equal(t, 5*time.Second, c.fail(a, now))

	// Quiet for MaxHostCooldown after expiry: pruned, the streak restarts.
	require.Equal(t, 10*time.Second, c.fail(a, now))
	c.prune(now.Add(10*time.Second + MaxHostCooldown - time.Millisecond))
	require.Len(t, c.entries, 1)
	c.prune(now.Add(10*time.Second + MaxHostCooldown))
	require.Empty(t, c.entries)
	require.Equal(t, 5*time.Second, c.fail(a, now.Add(2*time.Minute)))
}

func TestCooldownsConcurrentFailureNeverShortens(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	c := newCooldowns(time.Second)
	c.fail("h:1", t0)                 // until t0+1s
	c.fail("h:1", t0)                 // until t0+2s
	c.fail("h:1", t0.Add(-time.Hour)) // an old observation: until stays t0+2s
	require.True(t, c.blocked("h:1", t0.Add(1900*time.Millisecond)))
}

func TestWarnLimiter(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	var l warnLimiter
	require.True(t, l.allow("a:1", t0))
	require.False(t, l.allow("a:1", t0.Add(9999*time.Millisecond)))
	require.True(t, l.allow("b:1", t0.Add(time.Second)), "per host")
	require.True(t, l.allow("a:1", t0.Add(WarnInterval)))
	require.False(t, l.allow("a:1", t0.Add(WarnInterval+time.Second)))
	// lazy cleanup: b is older than the interval and gone after a's allow
	require.True(t, l.allow("a:1", t0.Add(3*WarnInterval)))
	require.Len(t, l.last, 1)
}
