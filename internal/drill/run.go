package drill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	randv2 "math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Report is the result of one run; immutable once Run returns it.
type Report struct {
	Table          string         `json:"table"`
	Started        time.Time      `json:"started"`
	Workers        int            `json:"workers"`
	Interval       time.Duration  `json:"interval_ns"`
	Backoff        Backoff        `json:"backoff"`
	Summary        Summary        `json:"summary"`
	Reconciliation Reconciliation `json:"reconciliation"`
	DropError      string         `json:"drop_error,omitempty"`
	Events         []Event        `json:"events"`
}

// Run creates the drill table on the primary, lets Workers write to it for
// Duration, reconciles every acknowledged and unknown write against the
// primary and drops the table. It fails only when the configuration is bad
// or the table cannot be created; everything after that is in the Report.
func Run(ctx context.Context, c Config, m *Metrics) (*Report, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("drill config: %w", err)
	}
	pc, err := connConfig(c.DSN, c.Validate)
	if err != nil {
		return nil, err
	}
	runID := randomHex(4)
	if c.Table == "" {
		c.Table = "doorman_drill_" + runID
	}
	if c.Rand == nil {
		c.Rand = randv2.Float64
	}
	if err := createTable(ctx, pc, c); err != nil {
		return nil, err
	}
	r := &Report{Table: c.Table, Workers: c.Workers, Interval: c.Interval, Backoff: c.Backoff}
	r.Started = time.Now()
	if c.Mark != nil {
		c.Mark(r.Started)
	}
	r.Events = runWorkers(ctx, pc, c, runID, r.Started, m)
	dur := time.Since(r.Started)
	stored, lookupErr, dropErr := lookup(ctx, pc, c, m)
	if dropErr != nil {
		r.DropError = dropErr.Error()
	}
	r.Reconciliation = Reconcile(r.Events, stored, lookupErr)
	r.Summary = Summarize(r.Events, dur)
	return r, nil
}

// connConfig parses dsn and applies what every attempt needs:
// target_session_attrs=read-write checked the validate way, the simple
// query protocol (the INSERT is one message: sent or not), and an
// application_name.
func connConfig(dsn, validate string) (*pgx.ConnConfig, error) {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	pc.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	if validate == ValidateLibpq {
		pc.ValidateConnect = validateReadWriteLibpq
	}
	pc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	if pc.RuntimeParams["application_name"] == "" {
		pc.RuntimeParams["application_name"] = "doorman-drill"
	}
	return pc, nil
}

// validateReadWriteLibpq is libpq 14+'s target_session_attrs=read-write:
// when the server reported both default_transaction_read_only and
// in_hot_standby at login, they decide (read-only if either is on) and no
// query runs; otherwise SHOW transaction_read_only decides.
func validateReadWriteLibpq(ctx context.Context, c *pgconn.PgConn) error {
	ro, hs := c.ParameterStatus("default_transaction_read_only"), c.ParameterStatus("in_hot_standby")
	if ro == "" || hs == "" {
		return pgconn.ValidateConnectTargetSessionAttrsReadWrite(ctx, c)
	}
	if ro == "on" || hs == "on" {
		return pgconn.ErrReadOnlyConnection
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func createTable(ctx context.Context, pc *pgx.ConnConfig, c Config) error {
	ctx, cancel := context.WithTimeout(ctx, 2*c.AttemptTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("connect to the primary: %w", err)
	}
	defer conn.Close(context.Background())
	sql := fmt.Sprintf(`CREATE TABLE %s (token text NOT NULL, worker int NOT NULL, attempt int NOT NULL,
		at timestamptz NOT NULL DEFAULT clock_timestamp())`, pgx.Identifier{c.Table}.Sanitize())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create table %s: %w", c.Table, err)
	}
	return nil
}

func runWorkers(ctx context.Context, pc *pgx.ConnConfig, c Config, runID string, start time.Time, m *Metrics) []Event {
	wctx, cancel := context.WithDeadline(ctx, start.Add(c.Duration))
	defer cancel()
	per := make([][]Event, c.Workers)
	var wg sync.WaitGroup
	for w := range c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per[w] = worker(ctx, wctx, pc, c, runID, w, start, m)
		}()
	}
	wg.Wait()
	var all []Event
	for _, evs := range per {
		all = append(all, evs...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	return all
}

// worker owns its events until it returns them. Attempts run under ctx,
// not wctx, so that the end of the run never turns an attempt in flight
// into an unknown; wctx only stops new attempts.
func worker(ctx, wctx context.Context, pc *pgx.ConnConfig, c Config, runID string, w int, start time.Time, m *Metrics) []Event {
	var events []Event
	fails := 0
	insert := fmt.Sprintf(`INSERT INTO %s (token, worker, attempt) VALUES ($1, $2, $3)
		RETURNING coalesce(host(inet_server_addr()), 'local') || ' ' || pg_postmaster_start_time()::text`,
		pgx.Identifier{c.Table}.Sanitize())
	for a := 0; wctx.Err() == nil; a++ {
		e := Event{Worker: w, Attempt: a, Token: fmt.Sprintf("%s-w%d-a%d", runID, w, a), Start: time.Since(start)}
		phase, server, err := attempt(ctx, pc, c.AttemptTimeout, insert, e)
		e.End = time.Since(start)
		e.Outcome, e.Phase, e.Category, e.SQLState = Classify(phase, err)
		e.Server = server
		events = append(events, e)
		m.attempt(e)
		pause := c.Interval
		if e.Outcome == Acknowledged {
			fails = 0
		} else {
			pause = c.Backoff.Delay(fails, c.Rand())
			fails++
		}
		t := time.NewTimer(pause)
		select {
		case <-wctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return events
}

// attempt connects afresh and runs the INSERT once; it returns the phase
// in which it stopped and, on success, the server's identity.
func attempt(ctx context.Context, pc *pgx.ConnConfig, timeout time.Duration, insert string, e Event) (Phase, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return PhaseConnect, "", err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
		defer ccancel()
		_ = conn.Close(cctx)
	}()
	var server string
	if err := conn.QueryRow(ctx, insert, e.Token, e.Worker, e.Attempt).Scan(&server); err != nil {
		return PhaseWait, "", err
	}
	return PhaseDone, server, nil
}

// lookup reads the stored tokens from the primary, retrying with the
// backoff until ReconcileTimeout, then drops the table unless KeepTable.
func lookup(ctx context.Context, pc *pgx.ConnConfig, c Config, m *Metrics) (map[string]int, error, error) {
	ctx, cancel := context.WithTimeout(ctx, c.ReconcileTimeout)
	defer cancel()
	var lastErr error
	for n := 0; ; n++ {
		stored, conn, err := lookupOnce(ctx, pc, c)
		if err == nil {
			m.reconcile("ok")
			var dropErr error
			if !c.KeepTable {
				_, dropErr = conn.Exec(ctx, "DROP TABLE "+pgx.Identifier{c.Table}.Sanitize())
			}
			_ = conn.Close(context.Background())
			return stored, nil, dropErr
		}
		lastErr = err
		t := time.NewTimer(c.Backoff.Delay(n, c.Rand()))
		select {
		case <-ctx.Done():
			t.Stop()
			m.reconcile("failed")
			return nil, fmt.Errorf("reconcile: %w", lastErr), fmt.Errorf("table %s not dropped: %w", c.Table, lastErr)
		case <-t.C:
			m.reconcile("retry")
		}
	}
}

func lookupOnce(ctx context.Context, pc *pgx.ConnConfig, c Config) (map[string]int, *pgx.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, 2*c.AttemptTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(actx, pc)
	if err != nil {
		return nil, nil, err
	}
	rows, err := conn.Query(actx, "SELECT token, count(*) FROM "+pgx.Identifier{c.Table}.Sanitize()+" GROUP BY token")
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, nil, err
	}
	stored := map[string]int{}
	var tok string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&tok, &n}, func() error { stored[tok] = n; return nil })
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, nil, err
	}
	return stored, conn, nil
}
