package harness

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/doorman-go/doorman/bench/pgbench"
)

// Target names, in the order of the report's columns.
const (
	TargetDirect    = "direct"
	TargetPgBouncer = "pgbouncer"
	TargetDoorman   = "pg_doorman"
)

// target is where pgbench connects.
type target struct {
	name    string
	port    int
	db      string
	pid     int    // the pooler's process, whose CPU time a run records; 0: none
	sslmode string // PGSSLMODE of pgbench; "": libpq's default
}

// poolerTarget is a target through p for database db.
func poolerTarget(name string, p *pooler, db string) target {
	return target{name: name, port: p.port, db: db, pid: p.proc.PID(), sslmode: p.sslmode}
}

// Case is one cell of the matrix.
type Case struct {
	Script  string
	Mode    string
	Clients int
	Connect bool `json:",omitempty"` // pgbench -C: a new connection per transaction
	Rate    int  `json:",omitempty"` // pgbench -R: transactions per second of all clients together; 0: unthrottled
}

func (c Case) String() string {
	s := fmt.Sprintf("%s -M %s -c %d", c.Script, c.Mode, c.Clients)
	if c.Connect {
		s += " -C"
	}
	if c.Rate > 0 {
		s += fmt.Sprintf(" -R %d", c.Rate)
	}
	return s
}

// CaseResult holds every round of one case, per target name.
type CaseResult struct {
	Case
	Runs map[string][]runResult
}

// TPS is the median TPS of a target's rounds that produced a summary.
func (r CaseResult) TPS(target string) float64 {
	var xs []float64
	for _, run := range r.Runs[target] {
		if run.Err == "" {
			xs = append(xs, run.Summary.TPS)
		}
	}
	return pgbench.Median(xs)
}

// ConnTime is the median time pgbench took to connect all clients.
func (r CaseResult) ConnTime(target string) time.Duration {
	var xs []float64
	for _, run := range r.Runs[target] {
		if run.Err == "" {
			xs = append(xs, run.Summary.ConnTimeMS)
		}
	}
	return time.Duration(pgbench.Median(xs) * float64(time.Millisecond))
}

// CPUPerTx is the pooler CPU time per transaction of a target: the CPU
// of its successful rounds divided by their transactions (0 when none).
// With Connect every transaction is a new connection, so this is the CPU
// per connection.
func (r CaseResult) CPUPerTx(target string) time.Duration {
	return r.perTx(target, func(run runResult) time.Duration { return run.PoolerCPU })
}

// UserCPUPerTx is the user-space part of CPUPerTx.
func (r CaseResult) UserCPUPerTx(target string) time.Duration {
	return r.perTx(target, func(run runResult) time.Duration { return run.PoolerUserCPU })
}

// PostgresCPUPerTx is the whole PostgreSQL server's CPU time per
// transaction in target's runs (runResult.PostgresCPU).
func (r CaseResult) PostgresCPUPerTx(target string) time.Duration {
	return r.perTx(target, func(run runResult) time.Duration { return run.PostgresCPU })
}

// PgbenchCPUPerTx is pgbench's own CPU time per transaction in target's
// runs (runResult.PgbenchCPU).
func (r CaseResult) PgbenchCPUPerTx(target string) time.Duration {
	return r.perTx(target, func(run runResult) time.Duration { return run.PgbenchCPU })
}

// CPUsBusy is how many CPUs pgbench, the pooler and PostgreSQL kept busy
// together in target's good runs: their CPU time over the runs' wall time
// (Elapsed), connecting included; 0 when not measured.
func (r CaseResult) CPUsBusy(target string) float64 {
	var cpu, wall time.Duration
	for _, run := range r.Runs[target] {
		if run.Err == "" && run.Summary.Processed > 0 && run.Elapsed > 0 && run.PostgresCPU > 0 {
			cpu += run.PgbenchCPU + run.PoolerCPU + run.PostgresCPU
			wall += run.Elapsed
		}
	}
	if wall == 0 {
		return 0
	}
	return cpu.Seconds() / wall.Seconds()
}

// perTx sums what of each good run of target over its transactions.
func (r CaseResult) perTx(target string, what func(runResult) time.Duration) time.Duration {
	var cpu time.Duration
	var txs int64
	for _, run := range r.Runs[target] {
		if run.Err == "" && run.Summary.Processed > 0 {
			cpu += what(run)
			txs += run.Summary.Processed
		}
	}
	if txs == 0 {
		return 0
	}
	return cpu / time.Duration(txs)
}

// Latency pools the transaction times of all rounds of a target.
func (r CaseResult) Latency(target string) pgbench.Latency {
	var all []int64
	for _, run := range r.Runs[target] {
		all = append(all, run.TxLog.Latencies...)
	}
	return pgbench.Summarize(all)
}

// Failed sums failed transactions, aborted clients and failed runs.
func (r CaseResult) Failed(target string) (failedTx int64, aborted, failedRuns int) {
	for _, run := range r.Runs[target] {
		failedTx += max(run.Summary.Failed, int64(run.TxLog.Failed)) // both count the same failures
		aborted += run.Stderr.AbortedClients
		if run.Err != "" || run.ExitCode != 0 {
			failedRuns++
		}
	}
	return failedTx, aborted, failedRuns
}

// Errors lists the distinct error texts of a target's rounds.
func (r CaseResult) Errors(target string) []string {
	seen := map[string]bool{}
	var out []string
	for _, run := range r.Runs[target] {
		for _, e := range append(append([]string(nil), run.Stderr.Errors...), run.Err) {
			if e != "" && !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// matrixCases lists script x mode x clients, select-only first.
func matrixCases(clients []int) []Case {
	var cases []Case
	for _, script := range []string{ScriptSelectOnly, ScriptTPCB} {
		for _, mode := range []string{"simple", "extended"} {
			for _, c := range clients {
				cases = append(cases, Case{Script: script, Mode: mode, Clients: c})
			}
		}
	}
	return cases
}

// connMargin multiplies the probed connection time in a run's -T: logins
// are slower while the previous run's backends are still exiting.
const connMargin = 1.5

// runner runs cases against targets.
type runner struct {
	pgbench  string
	settings Settings
	logDir   string
	progress io.Writer
	pgPID    int                      // the postmaster: PostgreSQL's CPU per run (readTreeCPU); 0: not read
	connTime map[string]time.Duration // probed connection time per target and client count
}

// duration is the -T of a run of c: pgbench's -T includes the time to
// connect all clients (which for hundreds of direct clients can exceed the
// whole run on a small machine), so the probed connection time, with
// margin, is added to the steady part; the reported TPS excludes
// connecting either way. A paused case (c.Rate) has a steady part of its
// own (pausedRunTime).
func (rn *runner) duration(ctx context.Context, t target, c Case) (time.Duration, error) {
	slack, err := rn.connSlack(ctx, t, c.Clients)
	if err != nil {
		return 0, err
	}
	if c.Rate > 0 {
		return slack + pausedRunTime(rn.settings), nil
	}
	return rn.settings.Duration + slack, nil
}

// connSlack is the part of a run's -T left for connecting clients to t:
// its connection time, probed once per target and client count, with
// margin.
func (rn *runner) connSlack(ctx context.Context, t target, clients int) (time.Duration, error) {
	key := fmt.Sprintf("%s/%s/%s/%d", t.name, t.db, t.sslmode, clients)
	if rn.connTime == nil {
		rn.connTime = map[string]time.Duration{}
	}
	conn, ok := rn.connTime[key]
	if !ok {
		res, err := runPgbench(ctx, rn.pgbench, runSpec{
			target: t.name, port: t.port, db: t.db, script: ScriptSelectOnly, mode: "simple",
			clients: clients, jobs: rn.settings.Jobs, txs: 1, logDir: rn.logDir, sslmode: t.sslmode,
		})
		if err != nil {
			return 0, fmt.Errorf("probe connection time of %s with %d clients: %w", t.name, clients, err)
		}
		conn = time.Duration(res.Summary.ConnTimeMS * float64(time.Millisecond))
		if res.Err != "" {
			conn = 10 * time.Second // unknown: be generous
		}
		rn.connTime[key] = conn
		fmt.Fprintf(rn.progress, "probe: %d clients connect to %s in %s\n", clients, t.name, conn.Round(time.Millisecond))
	}
	return (time.Duration(connMargin*float64(conn)) + time.Second).Round(time.Second), nil
}

// runCases runs every case against every target, rounds times; within a
// round the targets of a case run back to back, in an order rotated per
// case and round so that no target always runs first (on a warm cache) or
// last.
func (rn *runner) runCases(ctx context.Context, cases []Case, targets []target, rounds int) ([]CaseResult, error) {
	results := make([]CaseResult, len(cases))
	for i, c := range cases {
		results[i] = CaseResult{Case: c, Runs: map[string][]runResult{}}
	}
	total, done := rounds*len(cases)*len(targets), 0
	for round := range rounds {
		for i, c := range cases {
			for k := range targets {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("benchmark stopped: %w", err)
				}
				t := targets[(k+i+round)%len(targets)]
				dur, err := rn.duration(ctx, t, c)
				if err != nil {
					return nil, err
				}
				res, err := rn.run(ctx, t, c, dur)
				if err != nil {
					return nil, fmt.Errorf("%s against %s: %w", c, t.name, err)
				}
				results[i].Runs[t.name] = append(results[i].Runs[t.name], res)
				done++
				fmt.Fprintf(rn.progress, "[%d/%d] round %d %-32s %-10s %s\n", done, total, round+1, c, t.name, brief(res))
			}
		}
	}
	return results, nil
}

// run runs case c against t once for dur and records the CPU the pooler
// and PostgreSQL used over the whole run (pgbench's own comes with its
// result); a paused case also measures a window (window.go).
func (rn *runner) run(ctx context.Context, t target, c Case, dur time.Duration) (runResult, error) {
	var userBefore, sysBefore, pgBefore time.Duration
	if t.pid != 0 {
		var err error
		if userBefore, sysBefore, err = readCPUSplit(t.pid); err != nil {
			return runResult{}, err
		}
	}
	if rn.pgPID != 0 {
		var err error
		if pgBefore, err = readTreeCPU(rn.pgPID); err != nil {
			return runResult{}, fmt.Errorf("postgresql's cpu time: %w", err)
		}
	}
	spec := runSpec{
		target: t.name, port: t.port, db: t.db, script: c.Script, mode: c.Mode,
		clients: c.Clients, jobs: rn.settings.Jobs, dur: dur, logDir: rn.logDir,
		sslmode: t.sslmode, connect: c.Connect, rate: c.Rate,
	}
	if c.Rate > 0 {
		spec.window, spec.poolerPID = pausedWindow(rn.settings), t.pid
	}
	start := time.Now()
	res, err := runPgbench(ctx, rn.pgbench, spec)
	if err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	if rn.pgPID != 0 {
		pgAfter, err := readTreeCPU(rn.pgPID)
		if err != nil {
			return res, fmt.Errorf("postgresql's cpu time: %w", err)
		}
		res.PostgresCPU = pgAfter - pgBefore
	}
	if t.pid == 0 {
		return res, nil
	}
	userAfter, sysAfter, err := readCPUSplit(t.pid)
	if err != nil {
		return res, err
	}
	res.PoolerUserCPU = userAfter - userBefore
	res.PoolerCPU = res.PoolerUserCPU + sysAfter - sysBefore
	return res, nil
}

// brief is a one-line account of a run for the progress output.
func brief(r runResult) string {
	s := fmt.Sprintf("%9.0f tps", r.Summary.TPS)
	if r.Err != "" {
		s = "FAILED: " + r.Err
	}
	if r.Stderr.AbortedClients > 0 {
		s += fmt.Sprintf(", %d clients aborted", r.Stderr.AbortedClients)
	}
	if len(r.Stderr.Errors) > 0 {
		s += ", " + r.Stderr.Errors[0]
	}
	if w := r.Window; w != nil {
		txs := len(w.TxLog.Latencies)
		s += fmt.Sprintf(", window %.1f s: %d tx", w.To.Sub(w.From).Seconds(), txs)
		if cpu := w.UserCPU + w.SystemCPU; cpu > 0 && txs > 0 {
			s += fmt.Sprintf(", %s µs CPU/tx, %.2f context switches/tx", micros(cpu/time.Duration(txs)), float64(w.CtxSwitches)/float64(txs))
		}
	}
	return s
}
