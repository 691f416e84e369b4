package memreturn

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"go.uber.org/zap"
)

// Defaults of Options.
const (
	DefaultInterval = 5 * time.Second
	// DefaultBusy: allocated since the last return, enough to have left
	// free heap and cached stacks behind.
	DefaultBusy = 4 << 20
	// DefaultQuiet: allocated within one interval, little enough to call
	// the program quiet.
	DefaultQuiet = 256 << 10
)

// Stats is one look at the runtime's heap.
type Stats struct {
	Allocs   uint64 // bytes allocated since the program started
	Released uint64 // free heap pages released to the OS
}

// ShouldReturn is the rule: since the last return (last) the program
// allocated at least busy bytes, and since the previous look (prev) less
// than quiet. Garbage and free pages cannot be told apart from live memory
// without a collection, so the rule goes by allocation alone: what a busy
// spell allocated is what it may have left behind, and a quiet program
// will not need it back soon.
func ShouldReturn(last, prev, cur Stats, busy, quiet uint64) bool {
	return cur.Allocs-last.Allocs >= busy && cur.Allocs-prev.Allocs < quiet
}

// Observer is told of each return: the bytes the release added to what the
// runtime has given back.
type Observer interface {
	MemoryReturned(bytes uint64)
}

// Options configure Run; zero fields take the defaults.
type Options struct {
	Interval    time.Duration
	Busy, Quiet uint64
	Observer    Observer    // may be nil
	Log         *zap.Logger // may be nil
	// Read and Return are the runtime's (ReadStats, ReturnAll) unless a
	// test gives its own.
	Read   func() Stats
	Return func()
}

// Run looks every Interval until ctx ends.
func Run(ctx context.Context, o Options) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Busy == 0 {
		o.Busy = DefaultBusy
	}
	if o.Quiet == 0 {
		o.Quiet = DefaultQuiet
	}
	if o.Read == nil {
		o.Read = ReadStats
	}
	if o.Return == nil {
		o.Return = ReturnAll
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	prev := o.Read()
	last := prev
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := o.Read()
		if ShouldReturn(last, prev, cur, o.Busy, o.Quiet) {
			o.Return()
			after := o.Read()
			var back uint64
			if after.Released > cur.Released {
				back = after.Released - cur.Released
			}
			o.Log.Debug("returned free heap to the OS",
				zap.Uint64("allocated_since_last", cur.Allocs-last.Allocs), zap.Uint64("released", back))
			if o.Observer != nil {
				o.Observer.MemoryReturned(back)
			}
			cur = after
			last = after
		}
		prev = cur
	}
}

// ReturnAll collects twice and gives every free page back to the OS: what a
// sync.Pool holds survives one collection (its victim cache) and goes with
// the second, and a burst leaves pools full of buffers.
func ReturnAll() {
	runtime.GC()
	debug.FreeOSMemory()
}

var sampleNames = [...]string{
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/released:bytes",
}

// ReadStats reads Stats from runtime/metrics.
func ReadStats() Stats {
	var samples [len(sampleNames)]metrics.Sample
	for i, name := range sampleNames {
		samples[i].Name = name
	}
	metrics.Read(samples[:])
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	return Stats{Allocs: v(0), Released: v(1)}
}
