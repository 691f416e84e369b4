package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/doorman-go/doorman/bench/harness"
)

// connectTimeout bounds one login of a worker.
const connectTimeout = 10 * time.Second

// Run runs the soak test. progress gets one line per sample and one per
// new distinct unexpected error. The error is for failures to run at all
// (a missing binary, a pg_doorman that died); a run that ran but failed its
// verdict returns a nil error and Verdict.Pass false.
func Run(ctx context.Context, s Settings, progress io.Writer) (rep Report, err error) {
	rep = Report{Settings: s, Date: time.Now().UTC(), Commit: harness.GitCommit(s.RepoDir)}
	out := &lockedWriter{w: progress}
	if _, err := os.Stat(s.DoormanBin); err != nil {
		return rep, fmt.Errorf("pg_doorman binary: %w (run make build)", err)
	}
	if err := harness.RaiseFileLimit(2*s.Clients + 2048); err != nil {
		return rep, err
	}
	var dir string
	dir, err = harness.MakeWorkDir()
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(out, "starting PostgreSQL and pgbench -i -s %d\n", s.Scale)
	srv, err := harness.StartServer(ctx, s.Scale, s.Clients, s.PoolSize)
	if err != nil {
		return rep, err
	}
	defer srv.Stop()
	rep.Postgres = srv.Version()
	promPort, err := harness.FreePort()
	if err != nil {
		return rep, err
	}
	d, err := harness.StartDoorman(ctx, srv, harness.DoormanOptions{Bin: s.DoormanBin, Dir: dir,
		PoolSize: s.PoolSize, MaxClients: s.Clients + 100, PrometheusPort: promPort})
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, d.Stop()) }()
	if err := setupSchema(ctx, d.DSN()); err != nil {
		return rep, err
	}
	p := &probe{pid: d.PID(), metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", promPort),
		client: &http.Client{Timeout: 10 * time.Second}}
	err = load(ctx, s, d, p, out, &rep)
	return rep, err
}

// setupSchema creates the COPY target through pg_doorman.
func setupSchema(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect for setup: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sqlSetup); err != nil {
		return fmt.Errorf("create soak_copy: %w", err)
	}
	return nil
}

// load runs the workers for s.Duration and samples at every interval.
func load(ctx context.Context, s Settings, d *harness.Doorman, p *probe, out io.Writer, rep *Report) error {
	cfg, err := pgx.ParseConfig(d.DSN())
	if err != nil {
		return fmt.Errorf("parse dsn: %w", err)
	}
	cfg.ConnectTimeout = connectTimeout
	base, err := p.sample(ctx, 0)
	if err != nil {
		return err
	}
	rep.Samples = append(rep.Samples, base)
	fmt.Fprintln(out, ProgressLine(base))

	// The workers stop after the last sample, so that it sees full load
	// rather than 400 connections closing.
	start := time.Now()
	work, stop := context.WithCancel(ctx)
	defer stop()
	counters := &Counters{}
	var wg sync.WaitGroup
	seed := uint64(start.UnixNano())
	for i := range s.Clients {
		w := &worker{id: i, scale: s.Scale, mix: mixFor(i, s.Clients, s.NoKills), cfg: cfg,
			rng: rand.New(rand.NewPCG(seed, uint64(i))), counters: counters,
			report: func(k Kind, err error) { fmt.Fprintf(out, "unexpected error (%s): %v\n", k, err) }}
		wg.Go(func() { w.run(work) })
	}
	prev, runErr := Totals{}, error(nil)
	for _, at := range sampleTimes(s.Duration, s.Interval) {
		if !sleepUntil(ctx, start.Add(at)) {
			break
		}
		if runErr = checkAlive(d); runErr != nil {
			break
		}
		var sm Sample
		if sm, runErr = p.sample(ctx, time.Since(start)); runErr == nil {
			prev = appendSample(rep, sm, counters, prev, out)
		}
	}
	rep.Elapsed = time.Since(start)
	stop()
	wg.Wait()
	rep.Interrupted = ctx.Err() != nil
	if runErr == nil {
		// What finished while the workers stopped, so that the rows add
		// up to the totals, and pg_doorman once it has let the clients
		// go (a goroutine leak shows here); not judged, the load is gone.
		sm, err := p.settled(start)
		if err == nil {
			sm.Stopped = true
			appendSample(rep, sm, counters, prev, out)
		}
		runErr = err
	}
	rep.Totals = counters.Snapshot()
	rep.Errors = counters.ErrorTexts()
	rep.Verdict = Judge(rep.Samples, s.WarmupTime(), s.Tolerance, s.Slack, Sum(rep.Totals.Unexpected), !rep.Interrupted)
	return runErr
}

// sampleTimes are the sample times after the start: every interval, and
// the end of the run when it is not a whole number of intervals.
func sampleTimes(duration, interval time.Duration) []time.Duration {
	var out []time.Duration
	for at := interval; at <= duration; at += interval {
		out = append(out, at)
	}
	if len(out) == 0 || out[len(out)-1] < duration {
		out = append(out, duration)
	}
	return out
}

// appendSample records sm with the work done since prev and returns the
// new running totals.
func appendSample(rep *Report, sm Sample, c *Counters, prev Totals, out io.Writer) Totals {
	now := c.Snapshot()
	sm.Done = now.Sub(prev)
	rep.Samples = append(rep.Samples, sm)
	fmt.Fprintln(out, ProgressLine(sm))
	return now
}

// checkAlive fails when pg_doorman has exited under the load.
func checkAlive(d *harness.Doorman) error {
	if exited, err := d.Exited(); exited {
		return fmt.Errorf("pg_doorman exited during the soak: %w", err)
	}
	return nil
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// lockedWriter serialises the workers' and the sampler's progress lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
