package harness

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// warmUpTime is how long each pooler runs at each client count before
// the first round of a section, with nothing counted.
const warmUpTime = 5 * time.Second

// WarmUp is one run before the first round of a section, not counted.
type WarmUp struct {
	Target  string
	DB      string
	Clients int
	TPS     float64
}

// warmUpPlan is what warmUp runs: select-only simple through every target
// but direct PostgreSQL, at each client count once, the largest first, so
// that the pool has opened all the servers the section will use before
// the smaller counts run on the servers used last.
func warmUpPlan(targets []target, clients []int) []WarmUp {
	counts := slices.Clone(clients)
	slices.Sort(counts)
	counts = slices.Compact(counts)
	slices.Reverse(counts)
	var plan []WarmUp
	for _, t := range targets {
		if t.name == TargetDirect {
			continue
		}
		for _, n := range counts {
			plan = append(plan, WarmUp{Target: t.name, DB: t.db, Clients: n})
		}
	}
	return plan
}

// warmUp runs warmUpPlan before a section's first round and appends what
// it ran to done. A pooler's first run on new server connections measured
// the warm-up of the PostgreSQL backends behind it: on the machines of
// these runs, a fresh pg_doorman's first 5 s went from 5,116 to 12,922
// TPS second by second and its next run held about 13,700 throughout, and
// a fresh PgBouncer did the same (docs/benchmarks-passes.md, forty-fourth
// pass). Which pooler paid for it in round 1 depended on when each opened
// its servers. Direct PostgreSQL has new backends in every run; nothing
// warms them.
func (rn *runner) warmUp(ctx context.Context, targets []target, clients []int, done *[]WarmUp) error {
	byName := map[string]target{}
	for _, t := range targets {
		byName[t.name] = t
	}
	for _, w := range warmUpPlan(targets, clients) {
		t := byName[w.Target]
		slack, err := rn.connSlack(ctx, t, w.Clients)
		if err != nil {
			return err
		}
		res, err := runPgbench(ctx, rn.pgbench, runSpec{
			target: t.name, port: t.port, db: t.db, script: ScriptSelectOnly, mode: "simple",
			clients: w.Clients, jobs: rn.settings.Jobs, dur: warmUpTime + slack, logDir: rn.logDir, sslmode: t.sslmode,
		})
		if err != nil {
			return fmt.Errorf("warm-up of %s with %d clients: %w", t.name, w.Clients, err)
		}
		w.TPS = res.Summary.TPS
		*done = append(*done, w)
		fmt.Fprintf(rn.progress, "warm-up, not counted: %d clients through %s (%s) %s\n", w.Clients, t.name, t.db, brief(res))
	}
	return nil
}
