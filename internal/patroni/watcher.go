package patroni

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Topology is an immutable snapshot of one successful /cluster fetch. Do not
// modify it or its Cluster: the same pointer is handed to every reader.
type Topology struct {
	// Seq orders fetches by the moment they started; numbers of failed or
	// dropped fetches are skipped, so Seq is increasing but not contiguous.
	Seq       uint64
	FetchedAt time.Time // when the answer arrived (Watcher's clock)
	Cluster   *Cluster
	Source    string // base URL that answered
}

// Age is how old the snapshot is at now; callers fail closed past a limit.
func (t *Topology) Age(now time.Time) time.Duration { return now.Sub(t.FetchedAt) }

// WatcherOption configures a Watcher.
type WatcherOption func(*Watcher)

// WithClock sets the clock (default: the system clock).
func WithClock(c Clock) WatcherOption { return func(w *Watcher) { w.clock = c } }

// WithErrorHandler is called (from the polling goroutine or Refresh's caller)
// with each failed fetch. It must not block. The default ignores errors.
func WithErrorHandler(f func(error)) WatcherOption { return func(w *Watcher) { w.onError = f } }

// Watcher polls /cluster and publishes Topology snapshots. An answer whose
// fetch started before the one already applied is dropped, so a slow poll
// cannot overwrite a newer forced Refresh. Current, Refresh and Updates are
// safe for concurrent use; Run must be called at most once at a time.
type Watcher struct {
	client   *Client
	interval time.Duration
	clock    Clock
	onError  func(error)

	seq     atomic.Uint64
	mu      sync.Mutex // serialises apply; guards nothing else
	current atomic.Pointer[Topology]
	updates chan *Topology
}

// NewWatcher builds a watcher polling c every interval (default 3 s, as
// patroni_proxy's cluster_update_interval).
func NewWatcher(c *Client, interval time.Duration, opts ...WatcherOption) *Watcher {
	if interval <= 0 {
		interval = 3 * time.Second
	}
	w := &Watcher{client: c, interval: interval, clock: realClock{}, updates: make(chan *Topology, 1)}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Run fetches immediately, then every interval, until ctx is done; it then
// returns nil. Failed fetches go to the error handler and keep the previous
// topology (callers decide staleness from Current().FetchedAt).
func (w *Watcher) Run(ctx context.Context) error {
	t := w.clock.NewTicker(w.interval)
	defer t.Stop()
	for {
		_, _ = w.Refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Refresh fetches now, applies the answer unless a newer one was applied in
// the meantime, and returns the topology current after that (which may be the
// newer one). It does not wait for or disturb Run's schedule.
func (w *Watcher) Refresh(ctx context.Context) (*Topology, error) {
	seq := w.seq.Add(1)
	cl, src, err := w.client.FetchCluster(ctx)
	if err != nil {
		if w.onError != nil && !errors.Is(ctx.Err(), context.Canceled) {
			w.onError(err)
		}
		return nil, err
	}
	return w.apply(&Topology{Seq: seq, FetchedAt: w.clock.Now(), Cluster: cl, Source: src}), nil
}

// apply installs t unless a topology with a higher Seq is already current,
// and returns whichever is current afterwards.
func (w *Watcher) apply(t *Topology) *Topology {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur := w.current.Load(); cur != nil && cur.Seq > t.Seq {
		return cur
	}
	w.current.Store(t)
	select { // keep only the newest pending value
	case <-w.updates:
	default:
	}
	w.updates <- t
	return t
}

// Current returns the last applied topology, or nil before the first
// successful fetch.
func (w *Watcher) Current() *Topology { return w.current.Load() }

// Updates delivers every applied topology to a single consumer. The channel
// holds one value and keeps the newest: a slow consumer skips intermediate
// snapshots but always ends up with the latest. Every successful poll is
// delivered, even if the cluster did not change (FetchedAt moves on). It is
// never closed.
func (w *Watcher) Updates() <-chan *Topology { return w.updates }
