package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// profileClients is the client count of the strace and perf runs.
const profileClients = 10

// profileTopSymbols is how many symbols the report lists per pooler.
const profileTopSymbols = 12

// attachTimeout bounds waiting for strace to attach to every thread.
const attachTimeout = 10 * time.Second

// SyscallResult is strace -c -f on one pooler during one pgbench run of a
// fixed transaction count.
type SyscallResult struct {
	Pooler string
	Case   Case
	Txs    int64          // transactions pgbench processed
	Calls  []SyscallCount `json:",omitempty"`
	Err    string         `json:",omitempty"` // why there are no counts: strace missing or failed, pgbench failed
}

// PerTx is the calls of a report group (syscallGroups or "other") per
// transaction.
func (r SyscallResult) PerTx(group string) float64 {
	var n int64
	for _, c := range r.Calls {
		if syscallGroup(c.Name) == group {
			n += c.Calls
		}
	}
	return perTx(n, r.Txs)
}

// ReadErrorsPerTx is the failed read/recvfrom calls per transaction: on
// the poolers' non-blocking sockets these are EAGAIN, a read that found
// nothing and went back to the poller.
func (r SyscallResult) ReadErrorsPerTx() float64 {
	var n int64
	for _, c := range r.Calls {
		if syscallGroup(c.Name) == syscallGroups[0].name {
			n += c.Errors
		}
	}
	return perTx(n, r.Txs)
}

func perTx(n, txs int64) float64 {
	if txs == 0 {
		return 0
	}
	return float64(n) / float64(txs)
}

// ProfileResult is perf record -e cpu-clock -g on one pooler during one
// pgbench run of a fixed transaction count.
type ProfileResult struct {
	Pooler string
	Case   Case
	Txs    int64
	CPU    time.Duration // the pooler's utime + stime during the run
	Perf   PerfProfile
	Err    string `json:",omitempty"` // why there is no profile
}

// CPUPerTx is the pooler's CPU per transaction during the run, split into
// kernel and user by the share of perf samples in each.
func (r ProfileResult) CPUPerTx() (total, kernel, user time.Duration) {
	if r.Txs == 0 {
		return 0, 0, 0
	}
	total = r.CPU / time.Duration(r.Txs)
	kernel = time.Duration(float64(total) * r.Perf.KernelShare())
	return total, kernel, total - kernel
}

// profileCase is the pgbench case of the perf runs; strace runs it over
// both protocols.
func profileCase(mode string) Case {
	return Case{Script: ScriptSelectOnly, Mode: mode, Clients: profileClients}
}

// runProfiles traces and profiles each pooler target, one fixed-count
// pgbench run at a time, after the TPS runs so that neither tool slows
// them. A missing or failing tool is recorded in the results, not
// returned: the rest of the benchmark goes on.
func (rn *runner) runProfiles(ctx context.Context, poolers []target) (calls []SyscallResult, profiles []ProfileResult, err error) {
	for _, mode := range []string{"simple", "extended"} {
		for _, t := range poolers {
			r, err := rn.traceSyscalls(ctx, t, profileCase(mode))
			if err != nil {
				return nil, nil, err
			}
			fmt.Fprintf(rn.progress, "strace -c: %s, %s: %s\n", t.name, r.Case, briefSyscalls(r))
			calls = append(calls, r)
		}
	}
	for _, t := range poolers {
		p, err := rn.profileCPU(ctx, t, profileCase("simple"))
		if err != nil {
			return nil, nil, err
		}
		total, kernel, _ := p.CPUPerTx()
		fmt.Fprintf(rn.progress, "perf record: %s, %s: %d samples, %s CPU/tx, %s of it in the kernel %s\n",
			t.name, p.Case, p.Perf.Samples, micros(total), micros(kernel), p.Err)
		profiles = append(profiles, p)
	}
	return calls, profiles, nil
}

func briefSyscalls(r SyscallResult) string {
	if r.Err != "" {
		return r.Err
	}
	return fmt.Sprintf("%d transactions, %.2f reads and %.2f writes per transaction",
		r.Txs, r.PerTx(syscallGroups[0].name), r.PerTx(syscallGroups[1].name))
}

// fixedRun is the pgbench run of case c against t with ProfileTxs
// transactions per client, under wrap (nil: none).
func (rn *runner) fixedRun(ctx context.Context, t target, c Case, wrap []string) (runResult, error) {
	return runPgbench(ctx, rn.pgbench, runSpec{
		target: t.name, port: t.port, db: t.db, script: c.Script, mode: c.Mode,
		clients: c.Clients, jobs: rn.settings.Jobs, txs: rn.settings.ProfileTxs, logDir: rn.logDir,
		sslmode: t.sslmode, wrap: wrap,
	})
}

// toolMissing is the text of a result whose tool is not installed.
func toolMissing(tool, pkg string) string {
	return fmt.Sprintf("%s is not installed (Debian: apt-get install %s; scripts/deps.sh bench installs it)", tool, pkg)
}

// traceSyscalls counts the system calls of t's process and all its
// threads with strace -c -f -p during one fixed-count run of c.
func (rn *runner) traceSyscalls(ctx context.Context, t target, c Case) (SyscallResult, error) {
	res := SyscallResult{Pooler: t.name, Case: c}
	bin, err := exec.LookPath("strace")
	if err != nil {
		res.Err = toolMissing("strace", "strace")
		return res, nil
	}
	out := filepath.Join(rn.logDir, fmt.Sprintf("strace-%s-%s.txt", t.name, c.Mode))
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, bin, "-q", "-c", "-f", "-p", strconv.Itoa(t.pid), "-o", out)
	cmd.Stderr = &stderr
	cmd.SysProcAttr = childAttr(nil)
	if err := cmd.Start(); err != nil {
		res.Err = fmt.Sprintf("start strace: %v", err)
		return res, nil
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := waitTraced(ctx, t.pid, cmd.Process.Pid, done); err != nil {
		_ = cmd.Process.Kill()
		res.Err = fmt.Sprintf("%v; strace: %s", err, tail(strings.TrimSpace(stderr.String()), 200))
		return res, nil
	}
	run, runErr := rn.fixedRun(ctx, t, c, nil)
	_ = cmd.Process.Signal(syscall.SIGINT) // strace detaches and writes the table
	if err := waitExit(done, cmd.Process, stopTimeout); err != nil && !interrupted(err) {
		res.Err = fmt.Sprintf("strace: %v: %s", err, tail(strings.TrimSpace(stderr.String()), 200))
	}
	if runErr != nil {
		return res, runErr
	}
	if res.Err == "" {
		res.Txs, res.Err = run.Summary.Processed, run.Err
	}
	if res.Err == "" {
		res.Calls, err = readStraceFile(out)
		if err != nil {
			res.Err = err.Error()
		}
	}
	return res, nil
}

func readStraceFile(path string) ([]SyscallCount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read strace output: %w", err)
	}
	defer f.Close()
	return parseStraceCount(f)
}

// waitTraced polls until every thread of pid has tracer as its TracerPid
// (strace has attached to all of them), the tracer exits, or
// attachTimeout passes.
func waitTraced(ctx context.Context, pid, tracer int, done chan error) error {
	ctx, cancel := context.WithTimeout(ctx, attachTimeout)
	defer cancel()
	want := strconv.Itoa(tracer)
	for {
		ok, err := allTraced(pid, want)
		if err != nil || ok {
			return err
		}
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("strace exited before attaching: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("strace did not attach to every thread of pid %d in %s", pid, attachTimeout)
		case <-time.After(pollInterval):
		}
	}
}

// allTraced reports whether every task of pid shows TracerPid want.
func allTraced(pid int, want string) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, fmt.Errorf("list threads: %w", err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			return false, nil // a thread that just ended; look again
		}
		if statusField(string(b), "TracerPid") != want {
			return false, nil
		}
	}
	return true, nil
}

// statusField is the value of "key:\tvalue" in /proc status text.
func statusField(status, key string) string {
	for _, line := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// waitExit waits for the result on done, killing p after timeout.
func waitExit(done chan error, p *os.Process, timeout time.Duration) error {
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		_ = p.Kill()
		<-done
		return errors.New("did not stop after SIGINT and was killed")
	}
}

// interrupted reports whether err is an exit by SIGINT: strace detaches,
// writes its table and then dies of the signal it was sent.
func interrupted(err error) bool {
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return false
	}
	ws, ok := exitErr.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

// profileCPU samples t's process with perf record -e cpu-clock -g for as
// long as one fixed-count run of c lasts (perf runs pgbench as its
// workload, so the window is exact), reads the pooler's CPU time over the
// same run and the self time per symbol from perf report.
func (rn *runner) profileCPU(ctx context.Context, t target, c Case) (ProfileResult, error) {
	res := ProfileResult{Pooler: t.name, Case: c}
	bin, err := exec.LookPath("perf")
	if err != nil {
		res.Err = toolMissing("perf", "linux-perf")
		return res, nil
	}
	data := filepath.Join(rn.logDir, fmt.Sprintf("perf-%s.data", t.name))
	wrap := []string{bin, "record", "-q", "-e", "cpu-clock", "-g", "-p", strconv.Itoa(t.pid), "-o", data, "--"}
	before, err := readCPU(t.pid)
	if err != nil {
		return res, err
	}
	run, err := rn.fixedRun(ctx, t, c, wrap)
	if err != nil {
		return res, err
	}
	after, err := readCPU(t.pid)
	if err != nil {
		return res, err
	}
	res.CPU, res.Txs, res.Err = after-before, run.Summary.Processed, run.Err
	if res.Err != "" {
		return res, nil
	}
	report := exec.CommandContext(ctx, bin, "report", "-i", data, "--stdio", "-n", "--no-children", "--sort", "sym", "-g", "none")
	var stderr strings.Builder
	report.Stderr = &stderr
	text, err := report.Output()
	if err != nil {
		res.Err = fmt.Sprintf("perf report: %v: %s", err, tail(strings.TrimSpace(stderr.String()), 200))
		return res, nil
	}
	if err := os.WriteFile(data+".txt", text, 0o644); err != nil {
		return res, fmt.Errorf("save perf report: %w", err)
	}
	if res.Perf, err = parsePerfReport(strings.NewReader(string(text)), profileTopSymbols); err != nil {
		res.Err = err.Error()
	}
	return res, nil
}
