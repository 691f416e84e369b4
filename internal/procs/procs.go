package procs

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Thresholds of the rule (see the package comment); a window is Interval.
const (
	Interval    = time.Second
	DownAfter   = 3
	DownCPU     = 0.7 // cores
	DownLatency = time.Millisecond
	UpCPU       = 0.85 // cores: one P nearly saturated
	UpLatency   = 1500 * time.Microsecond
	// A load that goes back up within Settle windows of a move down made
	// under load (at least IdleCPU cores) doubles the quiet windows the
	// next move down needs, up to MaxDownAfter; one that stays down
	// Settle windows resets them. An idle process that went down and
	// meets a burst of work goes back up without doubling anything.
	Settle       = 10
	MaxDownAfter = 48
	IdleCPU      = 0.1 // cores
	// MinWaits is the fewest scheduler waits a window needs for its
	// latency to count: an idle process's handful (a metrics scrape, a
	// garbage collection) says nothing about a load.
	MinWaits = 1000
)

// Window is what one interval showed.
type Window struct {
	CPU      float64       // cores the process used (user + system)
	SchedP90 time.Duration // 90th percentile of runnable-to-running waits
	Waits    uint64        // how many such waits the window saw
	Procs    int           // GOMAXPROCS at the window's end
}

// state is what the rule remembers between windows; the zero value is
// the start.
type state struct {
	quiet  int  // quiet windows in a row on the default Ps
	need   int  // quiet windows the next move down needs; 0: DownAfter
	onOne  int  // windows judged on one P since the last move down
	loaded bool // the last move down was made under load
}

// decide returns the Ps for the next window and the rule's new state,
// given the current Ps (cur), the default (max) and the window just ended
// on cur.
func decide(cur, max int, w Window, st state) (int, state) {
	if st.need == 0 {
		st.need = DownAfter
	}
	if cur == 1 {
		if max > 1 && (w.CPU > UpCPU || (w.SchedP90 > UpLatency && w.Waits >= MinWaits)) {
			need := DownAfter
			switch {
			case st.onOne < Settle && st.loaded: // a load on the edge
				need = min(2*st.need, MaxDownAfter)
			case st.onOne < Settle:
				need = st.need
			}
			return max, state{need: need}
		}
		st.onOne++
		return 1, st
	}
	if w.CPU < DownCPU && (w.SchedP90 < DownLatency || w.Waits < MinWaits) {
		st.quiet++
		if st.quiet >= st.need {
			return 1, state{need: st.need, loaded: w.CPU >= IdleCPU}
		}
		return cur, st
	}
	st.quiet = 0
	return cur, st
}

// Options configure Run; the zero value is the runtime itself.
type Options struct {
	Log *zap.Logger // nil: no log
	// Sample and Set replace the runtime in tests: the window just
	// ended, and a change of GOMAXPROCS to n (0: the default) that returns
	// the Ps now in use.
	Sample func() Window
	Set    func(n int) int
	Every  time.Duration // 0: Interval
}

// Enabled reports whether Run adapts anything in this process: the
// GOMAXPROCS environment variable is unset and the default is above one.
func Enabled() bool {
	return os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > 1
}

// Run adapts GOMAXPROCS until ctx ends, then restores the default.
func Run(ctx context.Context, o Options) {
	if o.Sample == nil {
		o.Sample = newSampler().sample
	}
	if o.Set == nil {
		o.Set = func(n int) int {
			if n == 0 {
				runtime.SetDefaultGOMAXPROCS()
			} else {
				runtime.GOMAXPROCS(n)
			}
			return runtime.GOMAXPROCS(0)
		}
	}
	if o.Every == 0 {
		o.Every = Interval
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	t := time.NewTicker(o.Every)
	defer t.Stop()
	w := o.Sample() // the first window starts now
	def, cur, skip := w.Procs, w.Procs, false
	var st state
	if def <= 1 {
		return
	}
	for {
		select {
		case <-ctx.Done():
		case <-t.C:
			w = o.Sample()
		}
		if ctx.Err() != nil {
			if cur != def {
				o.Set(0)
			}
			return
		}
		switch {
		case skip: // the window after a change mixes both settings
			skip = false
			continue
		case w.Procs != cur: // changed by the runtime (a new cgroup limit)
			cur, st = w.Procs, state{}
			if cur > 1 {
				def = cur
			}
			continue
		}
		var next int
		next, st = decide(cur, def, w, st)
		if next == cur {
			continue
		}
		n := next
		if next == def {
			n = 0
		}
		got := o.Set(n)
		log.Debug("GOMAXPROCS changed", zap.Int("from", cur), zap.Int("to", got),
			zap.Float64("cpu_cores", w.CPU), zap.Duration("sched_latency_p90", w.SchedP90))
		if n == 0 {
			def = got
		}
		cur, skip = got, true
	}
}

// sampler reads the process's CPU time and the scheduler latency
// histogram, and gives each window's difference.
type sampler struct {
	samples []metrics.Sample
	prev    []uint64 // the histogram's counts at the last sample
	cpu     time.Duration
	at      time.Time
}

func newSampler() *sampler {
	return &sampler{samples: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
}

func (s *sampler) sample() Window {
	now := time.Now()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	metrics.Read(s.samples)
	var p90 time.Duration
	var waits uint64
	if s.samples[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := s.samples[0].Value.Float64Histogram()
		p90, waits = quantile(h, s.prev, 0.9)
		s.prev = append(s.prev[:0], h.Counts...)
	}
	w := Window{SchedP90: p90, Waits: waits, Procs: runtime.GOMAXPROCS(0)}
	if !s.at.IsZero() {
		if d := now.Sub(s.at); d > 0 {
			w.CPU = float64(cpu-s.cpu) / float64(d)
		}
	}
	s.cpu, s.at = cpu, now
	return w
}

// quantile is the q-quantile (nearest rank) of the histogram h's counts
// since prev (nil: all of them): the upper bound of the bucket it falls
// in (the lower one for the last, unbounded bucket), 0 when the window
// has no samples; and the window's count of samples.
func quantile(h *metrics.Float64Histogram, prev []uint64, q float64) (time.Duration, uint64) {
	var total uint64
	for i, c := range h.Counts {
		if i < len(prev) {
			c -= prev[i]
		}
		total += c
	}
	if total == 0 {
		return 0, 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h.Counts {
		if i < len(prev) {
			c -= prev[i]
		}
		seen += c
		if seen >= rank {
			up := h.Buckets[i+1]
			if math.IsInf(up, 1) {
				up = h.Buckets[i]
			}
			return time.Duration(up * float64(time.Second)), total
		}
	}
	return 0, total
}
