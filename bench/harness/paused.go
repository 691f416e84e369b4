package harness

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/doorman-go/doorman/bench/pgbench"
)

// pausedCases are the cases of the paused-clients section: select-only,
// simple protocol, each load's clients at its rate (pgbench -R).
func pausedCases(loads []PausedLoad) []Case {
	cases := make([]Case, 0, len(loads))
	for _, l := range loads {
		cases = append(cases, Case{Script: ScriptSelectOnly, Mode: "simple", Clients: l.Clients, Rate: l.Rate})
	}
	return cases
}

// runPaused runs the paused-clients cases against targets, interleaved
// like section 1, Settings.Rounds rounds.
func runPaused(ctx context.Context, s Settings, rn *runner, targets []target) ([]CaseResult, error) {
	return rn.runCases(ctx, pausedCases(s.Paused), targets, s.Rounds)
}

// runPausedOnly is BENCH_ONLY=paused: the paused-clients section through
// one pg_doorman and one PgBouncer and nothing else, printed to progress.
func runPausedOnly(ctx context.Context, s Settings, cfg poolerConfig, rn *runner, progress io.Writer, rep *Report) error {
	return withPoolers(ctx, s, cfg, func(bouncer, doorman *pooler) error {
		var err error
		if rep.Paused, err = runPaused(ctx, s, rn, loadTargets(cfg, bouncer, doorman)); err != nil {
			return err
		}
		var b strings.Builder
		renderPaused(&b, *rep)
		fmt.Fprint(progress, b.String())
		return nil
	})
}

// windows are the measurement windows of target's runs that succeeded.
func (r CaseResult) windows(target string) []WindowResult {
	var out []WindowResult
	for _, run := range r.Runs[target] {
		if run.Err == "" && run.Window != nil {
			out = append(out, *run.Window)
		}
	}
	return out
}

// WindowTPS is the median over target's rounds of the transactions per
// second inside the measurement window.
func (r CaseResult) WindowTPS(target string) float64 {
	var xs []float64
	for _, w := range r.windows(target) {
		xs = append(xs, w.TPS())
	}
	return pgbench.Median(xs)
}

// WindowPerTx is the pooler's user and system CPU time and context
// switches per transaction inside the windows of target's rounds: their
// sums over the sum of the windows' transactions (zeros when none).
func (r CaseResult) WindowPerTx(target string) (user, sys time.Duration, ctxSwitches float64) {
	var txs int64
	var cs int64
	for _, w := range r.windows(target) {
		user += w.UserCPU
		sys += w.SystemCPU
		cs += w.CtxSwitches
		txs += int64(len(w.TxLog.Latencies))
	}
	if txs == 0 {
		return 0, 0, 0
	}
	return user / time.Duration(txs), sys / time.Duration(txs), float64(cs) / float64(txs)
}

// WindowLatency pools the times of the transactions inside the windows of
// all of target's rounds.
func (r CaseResult) WindowLatency(target string) pgbench.Latency {
	var all []int64
	for _, w := range r.windows(target) {
		all = append(all, w.TxLog.Latencies...)
	}
	return pgbench.Summarize(all)
}
