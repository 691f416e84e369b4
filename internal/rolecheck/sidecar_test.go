package rolecheck

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for the cache.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// countingProbe returns st (or err) and counts calls; release, when not
// nil, holds every probe until it is closed.
type countingProbe struct {
	calls   atomic.Int32
	st      State
	err     error
	release chan struct{}
}

func (p *countingProbe) probe(context.Context, Options) (State, error) {
	p.calls.Add(1)
	if p.release != nil {
		<-p.release
	}
	return p.st, p.err
}

func newFakeSidecar(t *testing.T, p *countingProbe, clock *fakeClock, maxLag int64) *Sidecar {
	t.Helper()
	sc, err := NewSidecar(SidecarConfig{
		Options:       Options{User: "u", MaxLag: maxLag},
		CacheInterval: time.Second,
		Now:           clock.Now,
		Probe:         p.probe,
	})
	require.NoError(t, err)
	return sc
}

func status(sc *Sidecar, method, path string) int {
	rec := httptest.NewRecorder()
	sc.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code
}

func TestSidecarEndpoints(t *testing.T) {
	primary := State{Addr: "a", LagBytes: 0}
	replica := State{Addr: "a", InRecovery: true, LagBytes: 2 << 20}
	tests := []struct {
		path              string
		onPrimary, onRepl int
		onDown            int
	}{
		{"/primary", 200, 503, 503},
		{"/leader", 200, 503, 503},
		{"/replica", 503, 200, 503},
		{"/replica?lag=1MB", 503, 503, 503},
		{"/replica?lag=4MB", 503, 200, 503},
		{"/standby", 503, 200, 503},
		{"/read-only", 200, 200, 503},
		{"/read-only?lag=1MB", 200, 503, 503},
		{"/health", 200, 200, 503},
		{"/replica?lag=abc", 400, 400, 400},
		{"/liveness", 200, 200, 200},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			for _, c := range []struct {
				p    *countingProbe
				want int
			}{
				{&countingProbe{st: primary}, tt.onPrimary},
				{&countingProbe{st: replica}, tt.onRepl},
				{&countingProbe{err: errors.New("connect: refused")}, tt.onDown},
			} {
				sc := newFakeSidecar(t, c.p, &fakeClock{}, 0)
				for _, m := range []string{http.MethodGet, http.MethodOptions, http.MethodHead} {
					require.Equal(t, c.want, status(sc, m, tt.path), "%s %+v", m, c.p.st)
				}
			}
		})
	}
}

func TestSidecarDefaultMaxLag(t *testing.T) {
	p := &countingProbe{st: State{InRecovery: true, LagBytes: 2 << 20}}
	sc := newFakeSidecar(t, p, &fakeClock{}, 1<<20)
	require.Equal(t, 503, status(sc, http.MethodGet, "/replica"))
	require.Equal(t, 200, status(sc, http.MethodGet, "/replica?lag=16MB"))
	require.Equal(t, 200, status(sc, http.MethodGet, "/health"))
}

func TestSidecarCache(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	p := &countingProbe{err: errors.New("down")}
	sc := newFakeSidecar(t, p, clock, 0)
	for range 10 {
		require.Equal(t, 503, status(sc, http.MethodGet, "/primary"))
	}
	require.Equal(t, int32(1), p.calls.Load(), "errors are cached too")
	clock.Add(999 * time.Millisecond)
	status(sc, http.MethodGet, "/primary")
	require.Equal(t, int32(1), p.calls.Load())
	clock.Add(time.Millisecond)
	p.err, p.st = nil, State{}
	require.Equal(t, 200, status(sc, http.MethodGet, "/primary"))
	require.Equal(t, int32(2), p.calls.Load())
}

// TestSidecarSingleFlight: requests arriving while a probe runs wait for it
// instead of starting their own.
func TestSidecarSingleFlight(t *testing.T) {
	p := &countingProbe{release: make(chan struct{})}
	sc := newFakeSidecar(t, p, &fakeClock{}, 0)
	var wg sync.WaitGroup
	codes := make([]int, 50)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = status(sc, http.MethodGet, "/primary")
		}()
	}
	require.Eventually(t, func() bool { return p.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	close(p.release)
	wg.Wait()
	require.Equal(t, int32(1), p.calls.Load())
	for _, c := range codes {
		require.Equal(t, 200, c)
	}
}

func TestSidecarWaitHonoursContext(t *testing.T) {
	p := &countingProbe{release: make(chan struct{})}
	sc := newFakeSidecar(t, p, &fakeClock{}, 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = sc.State(context.Background())
	}()
	require.Eventually(t, func() bool { return p.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sc.State(ctx)
	require.ErrorIs(t, err, context.Canceled)
	close(p.release)
	<-done
}
