package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/doorman-go/doorman/bench/floor"
)

// FloorLoops is how many event loops the epoll forwarders of the floor
// section run: one, as PgBouncer runs one thread.
const FloorLoops = 1

// floorClients is the client count of the floor section's runs.
const floorClients = 10

// pooledClients is the client count of the floor section's second table:
// PgBouncer, pg_doorman and the txpool forwarder only, since the other
// forwarders would need a PostgreSQL connection per client.
const pooledClients = 400

// ForwarderSubcommand is the first argument that makes benchrun a bare
// forwarder (bench/floor) instead of the benchmark: the floor section
// starts its own executable with it, so that each forwarder is a process
// of its own whose CPU time can be read.
const ForwarderSubcommand = "forward"

// FloorReport is section 7: pgbench through PgBouncer, pg_doorman and the
// bare forwarders of bench/floor, interleaved.
type FloorReport struct {
	Cases   []CaseResult
	Targets []string // PgBouncer, pg_doorman, then one per forwarder mode
	Loops   int
	// Pooled is pooledClients clients through PgBouncer, pg_doorman and
	// the txpool forwarder (PooledTargets), on pools of PoolSize.
	Pooled        []CaseResult
	PooledTargets []string
	PoolSize      int
	// WarmUps ran through the pooling targets before the first round.
	WarmUps []WarmUp `json:",omitempty"`
}

// floorTarget names the forwarder of mode in the report.
func floorTarget(m floor.Mode) string { return "forwarder, " + string(m) }

// runFloor starts a fresh pg_doorman and PgBouncer and one forwarder per
// mode in front of PostgreSQL, and runs select-only with floorClients
// clients through each.
func runFloor(ctx context.Context, s Settings, cfg poolerConfig, rn *runner) (rep FloorReport, err error) {
	self, err := os.Executable()
	if err != nil {
		return rep, fmt.Errorf("floor: find own executable: %w", err)
	}
	doorman, err := startDoorman(ctx, s.DoormanBin, "doorman-floor", cfg)
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, doorman.proc.stop()) }()
	bouncer, err := startPgBouncer(ctx, s.PgBouncerBin, "pgbouncer-floor", cfg)
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, bouncer.proc.stop()) }()
	targets := []target{poolerTarget(TargetPgBouncer, bouncer, benchDB), poolerTarget(TargetDoorman, doorman, benchDB)}
	pooled := []target{targets[0], targets[1]} // and the txpool forwarder
	for _, m := range floor.Modes {
		fw, err := startForwarder(ctx, self, m, cfg)
		if err != nil {
			return rep, err
		}
		defer func() { err = errors.Join(err, fw.proc.stop()) }()
		// Through a forwarder pgbench logs in to PostgreSQL itself: its
		// pg_hba asks for SCRAM on 127.0.0.1 as it does of the poolers.
		t := poolerTarget(floorTarget(m), fw, benchDB)
		targets = append(targets, t)
		if m == floor.ModeTxPool {
			pooled = append(pooled, t)
		}
	}
	for _, t := range targets {
		rep.Targets = append(rep.Targets, t.name)
	}
	for _, t := range pooled {
		rep.PooledTargets = append(rep.PooledTargets, t.name)
	}
	rep.Loops, rep.PoolSize = FloorLoops, cfg.poolSize
	cases := []Case{
		{Script: ScriptSelectOnly, Mode: "simple", Clients: floorClients},
		{Script: ScriptSelectOnly, Mode: "extended", Clients: floorClients},
	}
	// Only the targets that pool: the other forwarders give every client
	// a PostgreSQL connection of its own, new in every run.
	if err := rn.warmUp(ctx, pooled, []int{floorClients, pooledClients}, &rep.WarmUps); err != nil {
		return rep, err
	}
	if rep.Cases, err = rn.runCases(ctx, cases, targets, s.Rounds); err != nil {
		return rep, err
	}
	cases = []Case{{Script: ScriptSelectOnly, Mode: "simple", Clients: pooledClients}}
	rep.Pooled, err = rn.runCases(ctx, cases, pooled, s.Rounds)
	return rep, err
}

// startForwarder runs `self forward` for mode towards PostgreSQL and waits
// until a login through it works.
func startForwarder(ctx context.Context, self string, m floor.Mode, cfg poolerConfig) (*pooler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	proc, err := startProcess("forwarder "+string(m), filepath.Join(cfg.dir, "forwarder-"+string(m)+".log"), nil, self,
		ForwarderSubcommand, "-listen", "127.0.0.1:"+strconv.Itoa(port),
		"-target", "127.0.0.1:"+strconv.Itoa(cfg.pgPort), "-mode", string(m), "-loops", strconv.Itoa(FloorLoops),
		"-pool", strconv.Itoa(cfg.poolSize))
	if err != nil {
		return nil, err
	}
	p := &pooler{name: floorTarget(m), port: port, proc: proc, sslmode: "disable"}
	if err := proc.waitLogin(ctx, p.dsn(benchDB)); err != nil {
		_ = proc.stop()
		return nil, err
	}
	return p, nil
}

// runFloorOnly is BENCH_ONLY=floor: the floor section and nothing else,
// printed to progress.
func runFloorOnly(ctx context.Context, s Settings, cfg poolerConfig, rn *runner, progress io.Writer, rep *Report) error {
	var err error
	if rep.Floor, err = runFloor(ctx, s, cfg, rn); err != nil {
		return err
	}
	var b strings.Builder
	renderFloor(&b, *rep)
	fmt.Fprint(progress, b.String())
	return nil
}
