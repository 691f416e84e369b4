package patroni_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func leaderName(t *testing.T, top *patroni.Topology) string {
	t.Helper()
	require.NotNil(t, top)
	ls := top.Cluster.Leaders()
	require.Len(t, ls, 1)
	return ls[0].Name
}

func recv(t *testing.T, ch <-chan *patroni.Topology) *patroni.Topology {
	t.Helper()
	select {
	case top := <-ch:
		return top
	case <-time.After(10 * time.Second):
		t.Fatal("no topology delivered")
		return nil
	}
}

type errSink struct {
	mu   sync.Mutex
	errs []error
}

func (s *errSink) add(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

func (s *errSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs)
}

func TestWatcherRunPolls(t *testing.T) {
	t.Parallel()
	srv := patronitest.NewServer(t, healthyBody(t))
	clock := patronitest.NewManualClock(epoch)
	w := patroni.NewWatcher(newClient(t, []string{srv.URL()}, patroni.ClientOptions{}), 3*time.Second, patroni.WithClock(clock))
	require.Nil(t, w.Current())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	first := recv(t, w.Updates()) // immediate fetch at start
	require.Equal(t, "node1", leaderName(t, first))
	require.Equal(t, srv.URL(), first.Source)
	require.Equal(t, epoch, first.FetchedAt)
	require.Same(t, first, w.Current())

	srv.SetBody(readFixture(t, "c_after_switchover/cluster.json"))
	require.Eventually(t, func() bool { return clock.Tickers() == 1 }, 10*time.Second, time.Millisecond)
	clock.Advance(3 * time.Second)
	second := recv(t, w.Updates())
	require.Equal(t, "node2", leaderName(t, second))
	require.Greater(t, second.Seq, first.Seq)
	require.Equal(t, epoch.Add(3*time.Second), second.FetchedAt)
	require.Equal(t, 3*time.Second, first.Age(clock.Now()))
	require.EqualValues(t, 2, srv.Requests())

	cancel()
	require.NoError(t, <-done)
	require.Zero(t, clock.Tickers(), "ticker stopped")
}

// TestWatcherDropsStaleObservation: a poll that started first but answers
// last must not overwrite the newer forced refresh.
func TestWatcherDropsStaleObservation(t *testing.T) {
	t.Parallel()
	srv := patronitest.NewServer(t, healthyBody(t)) // leader node1
	hold := make(chan struct{})
	srv.SetHook(func(n int64, r *http.Request) {
		if n == 1 {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
	})
	w := patroni.NewWatcher(newClient(t, []string{srv.URL()}, patroni.ClientOptions{}), time.Hour,
		patroni.WithClock(patronitest.NewManualClock(epoch)))

	slow := make(chan *patroni.Topology, 1)
	go func() {
		top, err := w.Refresh(context.Background())
		if err != nil {
			top = nil
		}
		slow <- top
	}()
	require.Eventually(t, func() bool { return srv.Requests() == 1 }, 10*time.Second, time.Millisecond)

	srv.SetBody(readFixture(t, "c_after_switchover/cluster.json")) // leader node2
	fresh, err := w.Refresh(context.Background())
	require.NoError(t, err)
	require.Equal(t, "node2", leaderName(t, fresh))

	close(hold) // the old poll now answers with node1
	got := <-slow
	require.Same(t, fresh, got, "stale answer dropped; Refresh returns the newer topology")
	require.Same(t, fresh, w.Current())
	require.Same(t, fresh, recv(t, w.Updates()))
	select {
	case extra := <-w.Updates():
		t.Fatalf("stale topology delivered: seq %d", extra.Seq)
	default:
	}
}

func TestWatcherKeepsLastTopologyOnError(t *testing.T) {
	t.Parallel()
	srv := patronitest.NewServer(t, healthyBody(t))
	sink := &errSink{}
	clock := patronitest.NewManualClock(epoch)
	w := patroni.NewWatcher(newClient(t, []string{srv.URL()}, patroni.ClientOptions{Retries: -1}), time.Second,
		patroni.WithClock(clock), patroni.WithErrorHandler(sink.add))

	good, err := w.Refresh(context.Background())
	require.NoError(t, err)

	srv.SetStatus(http.StatusServiceUnavailable)
	_, err = w.Refresh(context.Background())
	require.Error(t, err)
	require.Equal(t, 1, sink.count())
	require.Same(t, good, w.Current())

	// Run keeps polling through errors and recovers.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	require.Eventually(t, func() bool { return sink.count() == 2 }, 10*time.Second, time.Millisecond)
	<-w.Updates() // drain the first good one
	srv.SetStatus(http.StatusOK)
	require.Eventually(t, func() bool { return clock.Tickers() == 1 }, 10*time.Second, time.Millisecond)
	clock.Advance(time.Second)
	next := recv(t, w.Updates())
	require.Greater(t, next.Seq, good.Seq)
	require.Same(t, next, w.Current())
	cancel()
	require.NoError(t, <-done)
}

func TestWatcherUpdatesKeepsNewest(t *testing.T) {
	t.Parallel()
	srv := patronitest.NewServer(t, healthyBody(t))
	w := patroni.NewWatcher(newClient(t, []string{srv.URL()}, patroni.ClientOptions{}), 0)
	var last *patroni.Topology
	for range 3 {
		top, err := w.Refresh(context.Background())
		require.NoError(t, err)
		last = top
	}
	require.Same(t, last, recv(t, w.Updates()))
	select {
	case <-w.Updates():
		t.Fatal("only the newest topology is kept")
	default:
	}
}
