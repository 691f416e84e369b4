package idlepark

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkParkWake is one idle period of a session: Park, the client sends
// a byte, the wake goroutine starts and the byte is read back.
func BenchmarkParkWake(b *testing.B) {
	p := newParker(b)
	pr := newPair(b, "tcp")
	sc := pr.server.(syscall.Conn)
	woke := make(chan WakeReason, 1)
	wake := func(r WakeReason) { woke <- r }
	buf := make([]byte, 1)
	msg := []byte("x")
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Park(sc, wake); err != nil {
			b.Fatal(err)
		}
		if _, err := pr.client.Write(msg); err != nil {
			b.Fatal(err)
		}
		<-woke
		if _, err := pr.server.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoroutineRead is the same round trip with what sessions do
// today: one goroutine blocked in Read.
func BenchmarkGoroutineRead(b *testing.B) {
	pr := newPair(b, "tcp")
	got := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 1)
		for {
			if _, err := pr.server.Read(buf); err != nil {
				close(got)
				return
			}
			got <- struct{}{}
		}
	})
	msg := []byte("x")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pr.client.Write(msg); err != nil {
			b.Fatal(err)
		}
		<-got
	}
	b.StopTimer()
	require.NoError(b, pr.client.Close())
	for range got {
	}
	wg.Wait()
}

// TestParkedMemory measures the Go memory a parked connection costs, next to
// a goroutine blocked in Read on the same connection. 8,000 loopback pairs
// are 16,000 fds: under RLIMIT_NOFILE 20,000, so not parallel.
func TestParkedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("8,000 connections")
	}
	const n = 8000
	pairs := dialPairs(t, listen(t, "tcp"), n)
	p, err := New(nil)
	require.NoError(t, err)
	var woken sync.WaitGroup
	wake := func(WakeReason) { woken.Done() } // one func for all: measure the Parker alone

	epi0 := slabActive(t, "eventpoll_epi")
	before := memStats()
	woken.Add(n)
	for _, pr := range pairs {
		require.NoError(t, p.Park(pr.server.(syscall.Conn), wake))
	}
	parked := memStats()
	epi1 := slabActive(t, "eventpoll_epi")
	require.Equal(t, n, p.Len())
	perConn := float64(parked.HeapAlloc+parked.StackInuse-before.HeapAlloc-before.StackInuse) / n
	t.Logf("parked: %.0f B/conn of Go heap+stack (slots for fds up to %d: %d B); kernel eventpoll_epi +%d objects of 128 B",
		perConn, len(p.slots)-1, len(p.slots)*16, epi1-epi0)
	require.NoError(t, p.Close())
	woken.Wait()
	require.Less(t, perConn, 128.0)

	// The same connections, one goroutine each blocked in Read.
	before = memStats()
	var readers sync.WaitGroup
	var started sync.WaitGroup
	started.Add(n)
	for _, pr := range pairs {
		readers.Go(func() {
			var buf [1]byte
			started.Done()
			_, _ = pr.server.Read(buf[:])
		})
	}
	started.Wait()
	blocked := memStats()
	t.Logf("goroutine per conn: %.0f B/conn of Go heap+stack (stack alone %.0f B)",
		float64(blocked.HeapAlloc+blocked.StackInuse-before.HeapAlloc-before.StackInuse)/n,
		float64(blocked.StackInuse-before.StackInuse)/n)
	for _, pr := range pairs {
		_, err := pr.client.Write([]byte("x"))
		require.NoError(t, err)
	}
	readers.Wait()
}

func memStats() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// slabActive reads the active objects of a kernel slab cache (-1 if
// /proc/slabinfo is not readable). Other processes share the cache, so the
// figure is only logged.
func slabActive(t *testing.T, name string) int {
	f, err := os.Open("/proc/slabinfo")
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 1 && fields[0] == name {
			n, err := strconv.Atoi(fields[1])
			require.NoError(t, err)
			return n
		}
	}
	return -1
}
