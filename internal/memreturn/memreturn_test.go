package memreturn

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mib = 1 << 20

func TestShouldReturn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		last, prev, cur uint64 // Allocs of each look
		want            bool
	}{
		{"nothing allocated", 0, 0, 0, false},
		{"quiet but never busy", 0, 0, DefaultBusy - 1, false},
		{"busy spell over", 0, DefaultBusy, DefaultBusy + 1000, true},
		{"still busy", 0, DefaultBusy, DefaultBusy + DefaultQuiet, false},
		{"just quiet", 0, DefaultBusy, DefaultBusy + DefaultQuiet - 1, true},
		{"busy counted from the last return", 10 * mib, 12 * mib, 12*mib + 1, false},
		{"enough since the last return", 10 * mib, 14 * mib, 14*mib + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ShouldReturn(Stats{Allocs: tt.last}, Stats{Allocs: tt.prev}, Stats{Allocs: tt.cur}, DefaultBusy, DefaultQuiet)
			require.Equal(t, tt.want, got)
		})
	}
}

type observer struct {
	mu    sync.Mutex
	calls int
	bytes uint64
}

func (o *observer) MemoryReturned(b uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.bytes += b
}

func (o *observer) get() (int, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls, o.bytes
}

// A scripted runtime: Run returns once at the end of each busy spell,
// reports what the release added, and ends with its context.
func TestRunFollowsTheRule(t *testing.T) {
	t.Parallel()
	script := []Stats{
		{Allocs: 0},                                // Run's first look
		{Allocs: 20 * mib},                         // a burst
		{Allocs: 40 * mib},                         // still busy
		{Allocs: 40*mib + 1000},                    // quiet: return
		{Allocs: 40*mib + 2000, Released: 6 * mib}, // after the release
		{Allocs: 40*mib + 3000, Released: 6 * mib}, // quiet, nothing new to give back
		{Allocs: 41 * mib, Released: 6 * mib},
		{Allocs: 41*mib + 1000, Released: 6 * mib}, // quiet, but 1 MiB since the return
	}
	var i atomic.Int32
	read := func() Stats {
		n := int(i.Add(1)) - 1
		if n >= len(script) {
			return script[len(script)-1]
		}
		return script[n]
	}
	var returns atomic.Int32
	obs := &observer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{Interval: time.Millisecond, Read: read, Return: func() { returns.Add(1) }, Observer: obs})
	}()
	require.Eventually(t, func() bool { return int(i.Load()) > len(script)+3 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
	require.EqualValues(t, 1, returns.Load(), "one return, when the burst ended")
	calls, bytes := obs.get()
	require.Equal(t, 1, calls)
	require.EqualValues(t, 6*mib, bytes)
}

var sink [][]byte

// The real runtime: what a burst left behind goes back to the OS once the
// program is quiet.
func TestRunReturnsABurst(t *testing.T) {
	looked := make(chan struct{})
	var once sync.Once
	read := func() Stats {
		st := ReadStats()
		once.Do(func() { close(looked) })
		return st
	}
	obs := &observer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{Interval: 10 * time.Millisecond, Observer: obs, Read: read})
	}()
	<-looked
	// A burst that a busy machine deschedules for longer than an interval
	// looks quiet to Run half-way, while the burst is still live: that
	// return gives nothing back. The next burst (the previous one's heap
	// dropped before it) ends a busy spell again, and its return gives
	// the dropped heap back. So: bursts until the returns add up, at most
	// five.
	returned := func() bool { _, b := obs.get(); return b >= 8*mib }
	for burst := 1; !returned(); burst++ {
		require.LessOrEqual(t, burst, 5, "no return gave 8 MiB back after five bursts of 32 MiB")
		for i := 0; i < 4096; i++ {
			sink = append(sink, make([]byte, 8<<10)) // 32 MiB in small objects
		}
		sink = nil
		deadline := time.Now().Add(2 * time.Second)
		for !returned() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	<-done
	n, bytes := obs.get()
	require.Positive(t, n)
	// bytes is what the runtime's released heap grew by across the
	// returns themselves; the gauge compared with before could fall
	// again since, as a later burst reuses released pages.
	require.GreaterOrEqual(t, bytes, uint64(8*mib), "most of the 32 MiB went back to the OS")
}
