package procs

import (
	"context"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecide(t *testing.T) {
	quietW := Window{CPU: 0.4, SchedP90: 100 * time.Microsecond, Procs: 2}
	tests := []struct {
		name string
		cur  int
		w    Window
		st   state
		next int   // Ps for the next window
		want state // the rule's state after
	}{
		{"a quiet window is counted", 2, quietW, state{}, 2, state{quiet: 1, need: DownAfter}},
		{"the third quiet window in a row goes to one P", 2, quietW, state{quiet: DownAfter - 1}, 1, state{need: DownAfter, loaded: true}},
		{"an idle process goes to one P", 2, Window{CPU: 0.01, Procs: 2}, state{quiet: DownAfter - 1}, 1, state{need: DownAfter}},
		{"a wait under DownLatency is quiet", 2, Window{CPU: 0.4, SchedP90: 900 * time.Microsecond, Procs: 2}, state{quiet: 1}, 2, state{quiet: 2, need: DownAfter}},
		{"a busy window resets the count: CPU", 2, Window{CPU: 0.9, SchedP90: 100 * time.Microsecond, Procs: 2}, state{quiet: 2}, 2, state{need: DownAfter}},
		{"a busy window resets the count: latency", 2, Window{CPU: 0.4, SchedP90: DownLatency, Waits: MinWaits, Procs: 2}, state{quiet: 2}, 2, state{need: DownAfter}},
		{"a long wait seen too few times is quiet", 2, Window{CPU: 0.02, SchedP90: 5 * time.Millisecond, Waits: MinWaits - 1, Procs: 2}, state{quiet: 1}, 2, state{quiet: 2, need: DownAfter}},
		{"after a quick return more quiet windows are needed", 2, quietW, state{quiet: DownAfter - 1, need: 2 * DownAfter}, 2, state{quiet: DownAfter, need: 2 * DownAfter}},
		{"between the thresholds on one P: stay", 1, Window{CPU: 0.75, SchedP90: 1200 * time.Microsecond, Waits: MinWaits, Procs: 1}, state{onOne: 2}, 1, state{need: DownAfter, onOne: 3}},
		{"one P nearly saturated: back to the default", 1, Window{CPU: 0.9, SchedP90: 100 * time.Microsecond, Procs: 1}, state{onOne: Settle}, 2, state{need: DownAfter}},
		{"goroutines wait for the one P: back to the default", 1, Window{CPU: 0.3, SchedP90: 2 * time.Millisecond, Waits: MinWaits, Procs: 1}, state{onOne: Settle}, 2, state{need: DownAfter}},
		{"an idle process's few long waits (a GC, a scrape): stay", 1, Window{CPU: 0.01, SchedP90: 5 * time.Millisecond, Waits: 40, Procs: 1}, state{onOne: 2}, 1, state{need: DownAfter, onOne: 3}},
		{"back within Settle windows of a move down under load: the next move down needs twice as many", 1, Window{CPU: 0.3, SchedP90: 2 * time.Millisecond, Waits: MinWaits, Procs: 1}, state{need: DownAfter, onOne: Settle - 1, loaded: true}, 2, state{need: 2 * DownAfter}},
		{"back within Settle windows of a move down when idle: nothing doubles", 1, Window{CPU: 0.9, Procs: 1}, state{need: 2 * DownAfter, onOne: 0}, 2, state{need: 2 * DownAfter}},
		{"the doubling stops at MaxDownAfter", 1, Window{CPU: 0.9, Procs: 1}, state{need: MaxDownAfter, loaded: true}, 2, state{need: MaxDownAfter}},
		{"back after staying down: the count starts over", 1, Window{CPU: 0.9, Procs: 1}, state{need: MaxDownAfter, onOne: Settle, loaded: true}, 2, state{need: DownAfter}},
		{"quiet on one P: stay", 1, Window{CPU: 0.1, Procs: 1}, state{need: 4 * DownAfter}, 1, state{need: 4 * DownAfter, onOne: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, st := decide(tt.cur, 2, tt.w, tt.st)
			require.Equal(t, tt.next, next)
			require.Equal(t, tt.want, st)
		})
	}
}

func TestQuantile(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{0, 1e-4, 1e-3, 1e-2, math.Inf(1)},
		Counts:  []uint64{50, 45, 4, 1},
	}
	q := func(prev []uint64, p float64) time.Duration {
		d, _ := quantile(h, prev, p)
		return d
	}
	require.Equal(t, 100*time.Microsecond, q(nil, 0.5))
	require.Equal(t, time.Millisecond, q(nil, 0.9), "90 of 100 samples are below 1 ms")
	require.Equal(t, 10*time.Millisecond, q(nil, 0.999), "the +Inf bucket reports its lower bound")
	prev := []uint64{50, 45, 0, 0}
	require.Equal(t, 10*time.Millisecond, q(prev, 0.9), "only the samples since prev count")
	d, n := quantile(h, prev, 0.9)
	require.Equal(t, 10*time.Millisecond, d)
	require.Equal(t, uint64(5), n, "the window's samples")
	d, n = quantile(h, h.Counts, 0.9)
	require.Zero(t, d, "no samples in the window")
	require.Zero(t, n)
}

// script is a fake runtime for Run: Sample returns its windows in turn;
// once they are used up it closes used and waits for release (the test
// ends Run meanwhile). Set records the changes and returns the Ps it
// leaves.
type script struct {
	mu      sync.Mutex
	windows []Window
	sets    []int
	procs   int
	def     int
	used    chan struct{}
	release chan struct{}
}

func (s *script) sample() Window {
	s.mu.Lock()
	if len(s.windows) == 0 {
		s.mu.Unlock()
		close(s.used)
		<-s.release
		return Window{}
	}
	w := s.windows[0]
	s.windows = s.windows[1:]
	if w.Procs == 0 {
		w.Procs = s.procs
	}
	s.mu.Unlock()
	return w
}

func (s *script) set(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets = append(s.sets, n)
	s.procs = n
	if n == 0 {
		s.procs = s.def
	}
	return s.procs
}

func TestRun(t *testing.T) {
	quiet := Window{CPU: 0.2, SchedP90: 50 * time.Microsecond}
	idle := Window{CPU: 0.01, SchedP90: 50 * time.Microsecond}
	busy := Window{CPU: 0.95, SchedP90: 3 * time.Millisecond, Waits: MinWaits}
	tests := []struct {
		name    string
		def     int
		windows []Window // the first is Run's start
		sets    []int    // Set's calls, the last one at ctx's end
	}{
		{"quiet, then busy: down after DownAfter windows, up at once, the window after each change skipped",
			4, []Window{quiet, quiet, quiet, quiet, busy /* skipped */, busy, quiet /* skipped */, quiet}, []int{1, 0}},
		{"busy throughout: nothing changes", 2, []Window{busy, busy, busy, busy, busy}, nil},
		{"down, then the end restores the default", 2, []Window{quiet, quiet, quiet, quiet, quiet}, []int{1, 0}},
		{"a change by the runtime is followed, not judged", 2, []Window{quiet, quiet, quiet, {CPU: 0.2, SchedP90: 50 * time.Microsecond, Procs: 3}, quiet, quiet}, nil},
		{"one P by default: nothing to adapt", 1, []Window{quiet, quiet, quiet, quiet, quiet}, nil},
		{"idle, then a burst, then quiet: the second move down needs only DownAfter",
			2, []Window{idle, idle, idle, idle /* down */, idle /* skipped */, busy /* up */, quiet /* skipped */, quiet, quiet, quiet /* down */},
			[]int{1, 0, 1, 0}},
		{"quiet on two Ps, busy on one: DownAfter quiet windows after a quick return are not enough",
			2, []Window{quiet, quiet, quiet, quiet /* down */, quiet /* skipped */, busy /* up */, quiet /* skipped */, quiet, quiet, quiet, quiet},
			[]int{1, 0}},
		{"quiet on two Ps, busy on one: the second move down comes after twice DownAfter",
			2, []Window{quiet, quiet, quiet, quiet /* down */, quiet /* skipped */, busy /* up */, quiet /* skipped */, quiet, quiet, quiet, quiet, quiet, quiet /* down */},
			[]int{1, 0, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{windows: tt.windows, procs: tt.def, def: tt.def, used: make(chan struct{}), release: make(chan struct{})}
			used := s.used
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				Run(ctx, Options{Sample: s.sample, Set: s.set, Every: time.Millisecond})
			}()
			select {
			case <-used:
			case <-done: // returned at once (one P)
			}
			cancel()
			close(s.release)
			<-done
			s.mu.Lock()
			defer s.mu.Unlock()
			require.Equal(t, tt.sets, s.sets)
		})
	}
}

// On the real runtime an idle test process goes to one P, and back to
// the default when Run ends.
func TestRunRuntime(t *testing.T) {
	def := runtime.GOMAXPROCS(0)
	if !Enabled() {
		t.Skipf("GOMAXPROCS is %d and its variable %q: nothing to adapt", def, "GOMAXPROCS")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{Every: 20 * time.Millisecond})
	}()
	require.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	<-done
	require.Equal(t, def, runtime.GOMAXPROCS(0))
}

func TestSampler(t *testing.T) {
	s := newSampler()
	first := s.sample()
	require.Equal(t, runtime.GOMAXPROCS(0), first.Procs)
	require.Zero(t, first.CPU, "no window yet")
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) { // burn CPU: the window must see it
	}
	w := s.sample()
	require.Greater(t, w.CPU, 0.0)
	require.LessOrEqual(t, w.CPU, float64(runtime.NumCPU())+0.5)
}
