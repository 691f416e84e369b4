package session

import (
	"net"
	"strings"
	"testing"
	"time"
)

// idleDeadline puts every idle wait's deadline on the idleGrid, within
// (release - idleGrid, release] of the wait's start, and keeps the
// monotonic clock reading that SetReadDeadline goes by.
func TestIdleDeadline(t *testing.T) {
	now := time.Now()
	base := now.Add(-time.Duration(now.UnixNano() % int64(idleGrid))) // on the grid
	tests := []struct {
		name    string
		offset  time.Duration // of the wait's start from a grid point
		release time.Duration
	}{
		{"on a grid point", 0, idleRelease},
		{"just after one", time.Nanosecond, idleRelease},
		{"half way", idleGrid / 2, idleRelease},
		{"just before the next", idleGrid - time.Nanosecond, idleRelease},
		{"longest release, on a grid point", 0, idleRelease << maxReleaseShift},
		{"longest release, half way", idleGrid / 2, idleRelease << maxReleaseShift},
		{"doubled release, just after one", time.Nanosecond, 2 * idleRelease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := base.Add(tt.offset)
			got := idleDeadline(start, tt.release)
			if r := got.UnixNano() % int64(idleGrid); r != 0 {
				t.Fatalf("deadline %v is %v off the %v grid", got, time.Duration(r), idleGrid)
			}
			if d := got.Sub(start); d <= tt.release-idleGrid || d > tt.release {
				t.Fatalf("deadline %v after the start, want (%v, %v]", d, tt.release-idleGrid, tt.release)
			}
			if !strings.Contains(got.String(), "m=") {
				t.Fatalf("deadline %v lost the monotonic clock reading", got)
			}
		})
	}
	// Two waits that start apart within one grid interval share a deadline:
	// their timers expire together.
	a := idleDeadline(base.Add(time.Millisecond), idleRelease)
	b := idleDeadline(base.Add(idleGrid-time.Millisecond), idleRelease)
	if !a.Equal(b) {
		t.Fatalf("deadlines %v and %v differ", a, b)
	}
}

// adaptRelease doubles the release of a client back soon (releaseBack)
// after a park, up to idleRelease << maxReleaseShift, and halves it, down
// to idleRelease, for one that stayed away longer.
func TestAdaptRelease(t *testing.T) {
	tests := []struct {
		name  string
		shift uint8
		gap   time.Duration // since the last transaction's start
		want  uint8
	}{
		{"back soon, first park", 0, 150 * time.Millisecond, 1},
		{"back soon again", 1, 300 * time.Millisecond, 2},
		{"back soon at the bound", maxReleaseShift, 100 * time.Millisecond, maxReleaseShift},
		{"back right after a park at the bound", maxReleaseShift, idleRelease<<maxReleaseShift + 10*time.Millisecond, maxReleaseShift},
		{"back just within releaseBack", 2, releaseBack - 10*time.Millisecond, 3},
		{"away longer", 3, releaseBack + time.Millisecond, 2},
		{"away longer, at the shortest release", 0, time.Hour, 0},
		{"no transaction yet", 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{ConnectedAt: time.Now().Add(-2 * time.Hour), releaseShift: tt.shift}
			if tt.gap > 0 {
				s.xactStart = time.Since(s.ConnectedAt) - tt.gap
			}
			s.adaptRelease()
			if s.releaseShift != tt.want {
				t.Fatalf("release shift %d, want %d", s.releaseShift, tt.want)
			}
		})
	}
}

// idleWait keeps the deadline a wait set while it is between half and all
// of the new release away (a busy client's waits cost no timer update),
// and sets a new one when it is nearer, or farther: a deadline left by a
// longer wait (a slow client's wait until its park) must not stretch a
// shorter one.
func TestIdleWaitKeepsDeadlineInRange(t *testing.T) {
	release := idleRelease << 2 // 400 ms
	tests := []struct {
		name string
		left time.Duration // of the deadline set before; 0: none
		keep bool
	}{
		{"none", 0, false},
		{"all of the release away", release, true},
		{"just over half of it away", release/2 + 5*time.Millisecond, true},
		{"less than half away", release/2 - time.Millisecond, false},
		{"farther than the release", release + idleGrid, false},
		{"a park's wait away", parkAfter * release, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			g := &stallGuard{nc: a}
			var before time.Time
			if tt.left > 0 {
				before = time.Now().Add(tt.left)
				g.idleAt = before
			}
			g.idleWait(release)
			if tt.keep {
				if !g.idleAt.Equal(before) {
					t.Fatalf("deadline replaced: %v, want the one %v away kept", time.Until(g.idleAt), tt.left)
				}
				return
			}
			if g.idleAt.Equal(before) {
				t.Fatalf("deadline %v away kept", tt.left)
			}
			if d := time.Until(g.idleAt); d > release || d <= release-idleGrid-10*time.Millisecond {
				t.Fatalf("new deadline %v away, want within (%v, %v]", d, release-idleGrid, release)
			}
		})
	}
}
