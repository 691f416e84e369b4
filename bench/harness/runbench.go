package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/doorman-go/doorman/bench/pgbench"
)

// Scripts are pgbench's builtin scripts; "tpcb-like" is its default.
const (
	ScriptSelectOnly = "select-only"
	ScriptTPCB       = "tpcb-like"
)

// runSpec is one pgbench invocation.
type runSpec struct {
	target  string // "direct", "pgbouncer" or "pg_doorman"
	port    int
	db      string
	script  string
	mode    string // -M: simple, extended or prepared
	clients int
	jobs    int
	dur     time.Duration // -T
	txs     int           // -t instead of -T when positive
	logDir  string        // where the -l files go; emptied after reading
	sslmode string        // PGSSLMODE; "" leaves libpq's default
	connect bool          // -C: a new connection for every transaction
	rate    int           // -R: transactions per second of all clients together; 0: unthrottled
	wrap    []string      // a command pgbench runs under (perf record ... --); nil: none
	// window, when positive, is how long a measurement window inside the
	// run lasts once every client is connected (window.go); poolerPID is
	// the pooler whose CPU and context switches it reads (0: none).
	window    time.Duration
	poolerPID int
}

// runResult is what one pgbench run gave.
type runResult struct {
	Summary  pgbench.Summary
	Stderr   pgbench.Stderr
	ExitCode int
	Err      string // why there is no summary, "" when there is one
	TxLog    pgbench.TxLog
	// PoolerCPU is the user+system CPU time the pooler used during the
	// run (connecting included); 0 for direct runs.
	PoolerCPU time.Duration `json:",omitempty"`
	// PoolerUserCPU is the user-space part of PoolerCPU.
	PoolerUserCPU time.Duration `json:",omitempty"`
	// PostgresCPU is the user+system CPU time of the whole PostgreSQL
	// server during the run (readTreeCPU of the postmaster), its logins
	// and pgbench's vacuum included; 0 when not measured.
	PostgresCPU time.Duration `json:",omitempty"`
	// PgbenchCPU is pgbench's own user+system CPU time (its rusage), 0
	// when not measured (a wrapped run: strace or perf).
	PgbenchCPU time.Duration `json:",omitempty"`
	// Elapsed is the run's wall time, pgbench's start to its end
	// (connecting included), over which PostgresCPU was read.
	Elapsed time.Duration `json:",omitempty"`
	// Window is what the run's measurement window saw (runSpec.window);
	// nil when it had none or the window failed (then Err says why).
	Window *WindowResult `json:",omitempty"`
}

// runPgbench runs pgbench with -l and reads its summary and logs. A
// pgbench failure is recorded in the result, not returned: the benchmark
// reports it and goes on. The error is for the harness's own failures.
func runPgbench(ctx context.Context, bin string, spec runSpec) (runResult, error) {
	dir, err := os.MkdirTemp(spec.logDir, "run-")
	if err != nil {
		return runResult{}, fmt.Errorf("create pgbench log dir: %w", err)
	}
	defer os.RemoveAll(dir)
	args := pgbenchArgs(spec, filepath.Join(dir, "tx"))
	// pgbench -T does not stop clients stuck in a wait; bound the whole run.
	ctx, cancel := context.WithTimeout(ctx, spec.dur+2*time.Minute)
	defer cancel()
	if len(spec.wrap) > 0 {
		args = append(append(spec.wrap[1:len(spec.wrap):len(spec.wrap)], bin), args...)
		bin = spec.wrap[0]
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+benchPassword)
	if spec.sslmode != "" {
		cmd.Env = append(cmd.Env, "PGSSLMODE="+spec.sslmode)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	win, runErr, err := runMeasured(ctx, cmd, spec)
	if err != nil {
		return runResult{}, err
	}
	var res runResult
	if st := cmd.ProcessState; st != nil && len(spec.wrap) == 0 {
		res.PgbenchCPU = st.UserTime() + st.SystemTime()
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(runErr, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case runErr != nil:
		return res, fmt.Errorf("run pgbench: %w", runErr)
	}
	stderrCopy := stderr.String()
	if res.Stderr, err = pgbench.ParseStderr(&stderr); err != nil {
		return res, err
	}
	if res.Summary, err = pgbench.ParseSummary(bytes.NewReader(stdout.Bytes())); err != nil {
		res.Err = fmt.Sprintf("exit code %d, %v; stdout: %q; stderr: %q",
			res.ExitCode, err, tail(stdout.String(), 300), tail(stderrCopy, 300))
	}
	if err := readTxLogs(dir, pgbench.Window{}, &res.TxLog); err != nil {
		return res, err
	}
	if spec.window > 0 {
		return res, finishWindow(&res, win, dir)
	}
	return res, nil
}

// pgbenchArgs are the arguments of pgbench for spec, with the -l files
// named logPrefix.<pid>[.<thread>].
func pgbenchArgs(spec runSpec, logPrefix string) []string {
	args := []string{
		"-h", "127.0.0.1", "-p", strconv.Itoa(spec.port), "-U", benchUser,
		"-b", spec.script, "-M", spec.mode,
		"-c", strconv.Itoa(spec.clients), "-j", strconv.Itoa(max(1, min(spec.jobs, spec.clients))),
		"-l", "--log-prefix=" + logPrefix, spec.db,
	}
	if spec.connect {
		args = append(args, "-C")
	}
	if spec.rate > 0 {
		args = append(args, "-R", strconv.Itoa(spec.rate))
	}
	if spec.txs > 0 {
		return append(args, "-t", strconv.Itoa(spec.txs))
	}
	return append(args, "-T", strconv.Itoa(int(spec.dur/time.Second)))
}

// runMeasured runs cmd to its end. With spec.window it measures the
// window while cmd runs; a window that could not be measured is in
// win.failed, not in err, which is for the harness's own failures. runErr
// is cmd's own error, as from cmd.Run.
func runMeasured(ctx context.Context, cmd *exec.Cmd, spec runSpec) (win windowRun, runErr, err error) {
	if spec.window <= 0 {
		return win, cmd.Run(), nil
	}
	launch := time.Now()
	if err := cmd.Start(); err != nil {
		return win, nil, fmt.Errorf("start pgbench: %w", err)
	}
	exited := make(chan struct{})
	go func() { // the only writer of runErr, which is read after exited closes
		runErr = cmd.Wait()
		close(exited)
	}()
	win, err = measureWindow(ctx, spec, cmd.Process.Pid, launch, exited)
	<-exited
	return win, runErr, err
}

// readTxLogs reads every per-thread log file pgbench -l wrote into dir,
// the transactions that ended in w.
func readTxLogs(dir string, w pgbench.Window, log *pgbench.TxLog) error {
	files, err := filepath.Glob(filepath.Join(dir, "tx.*"))
	if err != nil {
		return fmt.Errorf("list pgbench logs: %w", err)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("open pgbench log: %w", err)
		}
		err = pgbench.ReadLatenciesIn(f, w, log)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(name), err)
		}
	}
	return nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
