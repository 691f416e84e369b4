package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// Report is everything one Run measured.
type Report struct {
	Date       time.Time
	Elapsed    time.Duration
	Machine    Machine
	Settings   Settings
	MaxConns   int // PostgreSQL max_connections
	Matrix     []CaseResult
	Prepared   []CaseResult
	WarmUps    []WarmUp          `json:",omitempty"` // before the first round of sections 1 and 2
	Paused     []CaseResult      // clients that pause between transactions (pgbench -R), after the matrix
	LoadMemory map[string]Memory // poolers' memory after the matrix
	Idle       []IdleResult
	IdleLimit  IdleLimit
	Syscalls   []SyscallResult // strace -c runs, after the matrix
	Profiles   []ProfileResult // perf record runs, after the matrix
	Floor      FloorReport     // the bare forwarders next to both poolers, after the profiles
	TLS        TLSReport
}

// Run runs the whole benchmark; progress gets one line per step.
func Run(ctx context.Context, s Settings, progress io.Writer) (Report, error) {
	rep := Report{Date: time.Now().UTC(), Settings: s, LoadMemory: map[string]Memory{}}
	pgbenchBin, err := checkBinaries(s)
	if err != nil {
		return rep, err
	}
	hard, err := raiseFileLimitToHard()
	if err != nil {
		return rep, err
	}
	rep.IdleLimit = newIdleLimit(hard, s.IdleMaxCap)
	idleCounts, err := rep.IdleLimit.resolve(s.IdleCounts)
	if err != nil {
		return rep, err
	}
	dir, err := makeWorkDir()
	if err != nil {
		return rep, err
	}
	if s.Keep {
		fmt.Fprintf(progress, "work directory %s is kept (BENCH_KEEP=1)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rep.Machine = describeMachine(s, pgbenchBin)
	fmt.Fprintf(progress, "machine: %s\n", rep.Machine)

	fmt.Fprintf(progress, "starting PostgreSQL and pgbench -i -s %d\n", s.Scale)
	pg, err := startPostgres(ctx, s)
	if err != nil {
		return rep, err
	}
	defer pg.stop()
	rep.Machine.Postgres = pg.version
	rep.MaxConns = pg.maxConns
	cfg := poolerConfig{dir: dir, pgPort: pg.Port, verifier: pg.verifier, poolSize: s.PoolSize,
		prepSize: s.PreparedPoolSize, maxClients: slices.Max(append([]int{0}, idleCounts...)) + s.MaxClients() + 100}
	rn := &runner{pgbench: pgbenchBin, settings: s, logDir: dir, progress: progress}
	// PostgreSQL's CPU per run needs the postmaster's children listed in
	// /proc (CONFIG_PROC_CHILDREN); without it the tables of each
	// process's CPU are left out, not the benchmark.
	pgPID, err := pg.PID()
	if err != nil {
		return rep, fmt.Errorf("postgresql: %w", err)
	}
	if _, err := readTreeCPU(pgPID); err != nil {
		fmt.Fprintf(progress, "PostgreSQL's CPU time is not measured: %v\n", err)
	} else {
		rn.pgPID = pgPID
	}
	if s.Only == OnlyFloor {
		err := runFloorOnly(ctx, s, cfg, rn, progress, &rep)
		rep.Machine.LoadAfter = loadAverage()
		rep.Elapsed = time.Since(rep.Date).Round(time.Second)
		return rep, err
	}
	if s.Only == OnlyPaused {
		err := runPausedOnly(ctx, s, cfg, rn, progress, &rep)
		rep.Machine.LoadAfter = loadAverage()
		rep.Elapsed = time.Since(rep.Date).Round(time.Second)
		return rep, err
	}
	if s.Only == OnlyIdle {
		err := runIdleAll(ctx, s, idleCounts, cfg, progress, &rep)
		rep.Machine.LoadAfter = loadAverage()
		rep.Elapsed = time.Since(rep.Date).Round(time.Second)
		return rep, err
	}
	if s.Only != OnlyTLS {
		if err := runLoad(ctx, s, cfg, rn, &rep); err != nil {
			return rep, err
		}
		if rep.Floor, err = runFloor(ctx, s, cfg, rn); err != nil {
			return rep, err
		}
		if err := runIdleAll(ctx, s, idleCounts, cfg, progress, &rep); err != nil {
			return rep, err
		}
	}
	if rep.TLS, err = runTLS(ctx, s, cfg, rn); err != nil {
		return rep, err
	}
	rep.Machine.LoadAfter = loadAverage()
	rep.Elapsed = time.Since(rep.Date).Round(time.Second)
	return rep, nil
}

// runIdleAll measures idle clients of a fresh pg_doorman and PgBouncer,
// for each count.
func runIdleAll(ctx context.Context, s Settings, counts []int, cfg poolerConfig, progress io.Writer, rep *Report) error {
	idle := []struct {
		tag, bin string
		start    startFunc
	}{{"doorman-idle", s.DoormanBin, startDoorman}, {"pgbouncer-idle", s.PgBouncerBin, startPgBouncer}}
	for i, n := range counts {
		for _, p := range idle {
			res, err := runIdle(ctx, n, cfg, p.start, p.bin, p.tag)
			if err != nil {
				return err
			}
			res.AtLimit = s.IdleCounts[i] == IdleMax
			fmt.Fprintf(progress, "idle clients: %s holds %d of %d clients with %.0f bytes each (%.0f at once; first client %d bytes), opened in %s\n",
				res.Pooler, res.Opened, n, res.PerClient(), res.PerClientAtOnce(), res.FirstClient(), res.ConnectTime.Round(time.Millisecond))
			rep.Idle = append(rep.Idle, res)
		}
	}
	return nil
}

// runLoad runs the throughput matrix, the paused-clients cases, the -M
// prepared cases and then the strace and perf runs through one pg_doorman
// and one PgBouncer.
func runLoad(ctx context.Context, s Settings, cfg poolerConfig, rn *runner, rep *Report) error {
	return withPoolers(ctx, s, cfg, func(bouncer, doorman *pooler) error {
		return runLoadThrough(ctx, s, cfg, rn, rep, bouncer, doorman)
	})
}

// withPoolers starts one pg_doorman and one PgBouncer, runs f with them
// and stops both.
func withPoolers(ctx context.Context, s Settings, cfg poolerConfig, f func(bouncer, doorman *pooler) error) (err error) {
	doorman, err := startDoorman(ctx, s.DoormanBin, "doorman", cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, doorman.proc.stop()) }()
	bouncer, err := startPgBouncer(ctx, s.PgBouncerBin, "pgbouncer", cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, bouncer.proc.stop()) }()
	return f(bouncer, doorman)
}

// runLoadThrough is runLoad's work, through poolers withPoolers started.
func runLoadThrough(ctx context.Context, s Settings, cfg poolerConfig, rn *runner, rep *Report, bouncer, doorman *pooler) (err error) {
	targets := loadTargets(cfg, bouncer, doorman)
	if err := rn.warmUp(ctx, targets, s.Clients, &rep.WarmUps); err != nil {
		return err
	}
	if rep.Matrix, err = rn.runCases(ctx, matrixCases(s.Clients), targets, s.Rounds); err != nil {
		return err
	}
	for _, p := range []*pooler{doorman, bouncer} {
		if rep.LoadMemory[p.name], err = readMemory(p.proc.PID()); err != nil {
			return err
		}
	}
	if rep.Paused, err = runPaused(ctx, s, rn, targets); err != nil {
		return err
	}
	targets[1].db, targets[2].db = preparedDB, preparedDB
	prepared := []Case{
		{Script: ScriptSelectOnly, Mode: "prepared", Clients: s.PreparedClients},
		{Script: ScriptTPCB, Mode: "prepared", Clients: s.PreparedClients},
	}
	if err := rn.warmUp(ctx, targets, []int{s.PreparedClients}, &rep.WarmUps); err != nil {
		return err
	}
	if rep.Prepared, err = rn.runCases(ctx, prepared, targets, s.Rounds); err != nil {
		return err
	}
	poolers := []target{poolerTarget(TargetPgBouncer, bouncer, benchDB), poolerTarget(TargetDoorman, doorman, benchDB)}
	rep.Syscalls, rep.Profiles, err = rn.runProfiles(ctx, poolers)
	return err
}

// loadTargets are direct PostgreSQL, bouncer and doorman, for the
// benchmark database, in the order of the report's columns.
func loadTargets(cfg poolerConfig, bouncer, doorman *pooler) []target {
	return []target{
		// sslmode disable as for the plaintext poolers: no SSLRequest round trip per login
		{name: TargetDirect, port: cfg.pgPort, db: benchDB, sslmode: "disable"},
		poolerTarget(TargetPgBouncer, bouncer, benchDB),
		poolerTarget(TargetDoorman, doorman, benchDB),
	}
}

// startFunc starts a pooler binary with a config tag.
type startFunc func(ctx context.Context, bin, tag string, cfg poolerConfig) (*pooler, error)

// runIdle starts a fresh pooler, measures it holding n idle clients and
// stops it.
func runIdle(ctx context.Context, n int, cfg poolerConfig, start startFunc, bin, tag string) (res IdleResult, err error) {
	p, err := start(ctx, bin, tag, cfg)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, p.proc.stop()) }()
	return measureIdle(ctx, p, n)
}

// checkBinaries finds pgbench and checks the two poolers exist.
func checkBinaries(s Settings) (pgbench string, err error) {
	pgbench, err = pgtest.FindBinary("pgbench")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(s.DoormanBin); err != nil {
		return "", fmt.Errorf("pg_doorman binary: %w (run make build)", err)
	}
	if _, err := os.Stat(s.PgBouncerBin); err != nil {
		return "", fmt.Errorf("pgbouncer binary: %w (Debian: apt-get install pgbouncer)", err)
	}
	return pgbench, nil
}

// rlimit is n as a syscall.Rlimit field, uint64 on Linux and int64 on
// the BSDs (the first argument gives only the type).
func rlimit[T int64 | uint64](_ T, n int) T { return T(n) }

// raiseFileLimit lifts RLIMIT_NOFILE to at least n (children inherit it).
func raiseFileLimit(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("get open file limit: %w", err)
	}
	if uint64(lim.Cur) >= uint64(n) {
		return nil
	}
	lim.Cur = rlimit(lim.Cur, n)
	lim.Max = max(lim.Max, lim.Cur)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raise open file limit to %d (run as root or raise ulimit -Hn): %w", n, err)
	}
	return nil
}

// makeWorkDir makes a directory the postgres OS user can use too.
func makeWorkDir() (string, error) {
	dir, err := os.MkdirTemp("/tmp", "doorman-bench-")
	if err != nil {
		return "", fmt.Errorf("create work dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("chmod work dir: %w", err)
	}
	cred, err := postgresCredential()
	if err != nil || cred == nil {
		return dir, err
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return "", fmt.Errorf("chown work dir: %w", err)
	}
	return dir, nil
}
