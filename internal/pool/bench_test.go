package pool

import (
	"context"
	"sync"
	"testing"
	"time"
)

// handoffWorkers and handoffConns shape BenchmarkHandoff: four times as
// many clients as connections, so that nearly every acquire queues and
// ends in a handoff, as under pg_doorman's pools at 100 and 400 clients.
const (
	handoffWorkers = 16
	handoffConns   = 4
)

// runHandoff runs b.N acquire-release cycles over handoffWorkers
// goroutines.
func runHandoff(b *testing.B, cycle func()) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	per := b.N / handoffWorkers
	b.ResetTimer()
	for range handoffWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				cycle()
			}
		}()
	}
	wg.Wait()
}

// BenchmarkHandoff measures a queued acquire and the release that hands
// its connection over (one op = one cycle), with the bounds pg_doorman
// passes (a deadline), against a buffered channel of tokens, the least a
// FIFO handoff between goroutines can cost. docs/benchmarks-passes.md (eighteenth
// pass) has the figures and where the difference goes.
func BenchmarkHandoff(b *testing.B) {
	b.Run("pool", func(b *testing.B) {
		cn := &connector{}
		p := New(Options[*fakeConn]{Config: Config{MaxSize: handoffConns, MaxParallelCreates: handoffConns, WarmRatio: 100},
			Connect: cn.connect, Jitter: func() float64 { return 1 }})
		defer p.Close()
		ctx := context.Background()
		bounds := Bounds{Deadline: time.Now().Add(time.Hour)}
		runHandoff(b, func() {
			c, err := p.AcquireWithin(ctx, bounds)
			if err != nil {
				b.Error(err)
				return
			}
			p.Release(c)
		})
		b.StopTimer()
		b.ReportMetric(float64(p.Stats().Counters.Handoffs)/float64(b.N), "handoffs/op")
	})
	b.Run("channel", func(b *testing.B) {
		tokens := make(chan int, handoffConns)
		for i := range handoffConns {
			tokens <- i
		}
		runHandoff(b, func() {
			t := <-tokens
			tokens <- t
		})
	})
}

// BenchmarkIdleCycle is the pool's part of a transaction when nobody
// waits: TryAcquire of an idle connection and its Release, from one
// goroutine, as a transaction core on an event loop would call them.
func BenchmarkIdleCycle(b *testing.B) {
	cn := &connector{}
	p := New(Options[*fakeConn]{Config: Config{MaxSize: handoffConns, MaxParallelCreates: handoffConns, WarmRatio: 100},
		Connect: cn.connect, Jitter: func() float64 { return 1 }})
	defer p.Close()
	ctx := context.Background()
	c, err := p.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	p.Release(c)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c := p.TryAcquire(ctx)
		if c == nil {
			b.Fatal("no idle connection")
		}
		p.Release(c)
	}
}
