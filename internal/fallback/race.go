package fallback

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
)

// attempt is one candidate's outcome.
type attempt struct {
	index    int
	conn     Conn
	err      error
	timedOut bool // its own fallback_connect_timeout passed
}

// raceWave starts connect to every candidate at once, each under
// ConnectTimeout, and returns the first success with its index; the others
// are cancelled and any that still succeed are closed in the background.
// When all fail it returns the breakdown, also as the error. Failures caused
// by the cancellation or by ctx are not counted and cool no host down.
func (d *Dialer) raceWave(ctx context.Context, wave []Candidate, connect ConnectFunc) (Conn, int, *RejectedError, error) {
	rctx, cancel := context.WithCancel(ctx)
	results := make(chan attempt, len(wave))
	for i, c := range wave {
		go d.startCandidate(rctx, i, c.Target, connect, results)
	}
	rej := &RejectedError{}
	for pending := len(wave); pending > 0; pending-- {
		var a attempt
		select {
		case a = <-results:
		case <-ctx.Done():
			cancel()
			d.drain(results, pending)
			return nil, -1, rej, ctx.Err()
		}
		if a.err == nil {
			cancel()
			d.candidateOK(wave[a.index])
			d.drain(results, pending-1)
			return a.conn, a.index, rej, nil
		}
		if ctx.Err() != nil && !a.timedOut {
			continue // the outer deadline, not the candidate
		}
		r := ReasonOf(a.err, a.timedOut)
		rej.Counts[r]++
		d.candidateFailed(wave[a.index], r, a.err)
	}
	cancel()
	if ctx.Err() != nil {
		return nil, -1, rej, ctx.Err()
	}
	return nil, -1, rej, rej
}

// startCandidate runs one full server startup under the per-candidate
// timeout and reports it.
func (d *Dialer) startCandidate(ctx context.Context, i int, t Target, connect ConnectFunc, out chan<- attempt) {
	cctx, cancel := context.WithTimeout(ctx, d.opts.ConnectTimeout)
	defer cancel()
	c, err := connect(cctx, t)
	if err == nil && c == nil {
		err = errors.New("connect returned no connection")
	}
	timedOut := err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
	if err != nil && timedOut && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w after %s: %w", context.DeadlineExceeded, d.opts.ConnectTimeout, err)
	}
	out <- attempt{index: i, conn: c, err: err, timedOut: timedOut}
}

// drain collects the n results still to come in the background and closes
// late successes. Close waits for it.
func (d *Dialer) drain(results <-chan attempt, n int) {
	if n == 0 {
		return
	}
	d.wg.Go(func() {
		for range n {
			if a := <-results; a.err == nil {
				_ = a.conn.Close()
			}
		}
	})
}

func (d *Dialer) candidateOK(c Candidate) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cooldowns.succeed(c.Target.Address)
}

// candidateFailed starts or extends the host's cooldown, counts the failure
// and logs it: WARN at most once per WarnInterval per host, DEBUG otherwise.
func (d *Dialer) candidateFailed(c Candidate, r Reason, err error) {
	d.mu.Lock()
	now := d.clock.Now()
	cooldown := d.cooldowns.fail(c.Target.Address, now)
	warn := d.warns.allow(c.Target.Address, now)
	d.mu.Unlock()
	d.metrics.CandidateFailure(d.opts.PoolName, r)
	msg := fmt.Sprintf("%s rejected (%s: %v)", c.Target.Address, r, err)
	fields := []zap.Field{zap.String("member", c.Name), zap.String("role", string(c.Role)), zap.Duration("host_cooldown", cooldown)}
	if warn {
		d.log.Warn(msg, fields...)
	} else {
		d.log.Debug(msg, fields...)
	}
}

// flight is one GET /cluster shared by every caller that needs it while it
// runs.
type flight struct {
	done    chan struct{}
	cluster *patroni.Cluster
	err     error
}

// fetch joins the running /cluster request or starts one. The request runs
// in the background, bounded by APITimeout, so that a caller giving up does
// not fail the others.
func (d *Dialer) fetch(ctx context.Context) (*patroni.Cluster, error) {
	d.mu.Lock()
	f := d.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		d.flight = f
		d.wg.Go(func() { d.runFetch(f) })
	}
	d.mu.Unlock()
	d.fetchWaits.Add(1)
	select {
	case <-f.done:
		return f.cluster, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *Dialer) runFetch(f *flight) {
	ctx, cancel := context.WithTimeout(d.base, d.opts.APITimeout)
	defer cancel()
	start := time.Now()
	f.cluster, _, f.err = d.fetcher.FetchCluster(ctx)
	d.metrics.PatroniRequest(d.opts.PoolName, time.Since(start), f.err)
	d.mu.Lock()
	d.flight = nil
	d.mu.Unlock()
	close(f.done)
}
