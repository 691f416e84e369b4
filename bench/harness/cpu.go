package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat: the kernel
// exports them in USER_HZ, which is 100 on every Linux architecture's
// user-space ABI (sysconf(_SC_CLK_TCK)), whatever the kernel's own HZ.
const userHZ = 100

// readCPU is the CPU time (user + system) process pid has used so far.
func readCPU(pid int) (time.Duration, error) {
	user, sys, err := readCPUSplit(pid)
	return user + sys, err
}

// readCPUSplit is the user and the system CPU time of process pid so far.
func readCPUSplit(pid int) (user, sys time.Duration, err error) {
	t, err := readStatTicks(pid)
	return t[0], t[1], err
}

// parseStatTicks reads utime, stime, cutime and cstime (fields 14 to 17)
// from the text of /proc/PID/stat. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself, so fields are
// counted after the last ")".
func parseStatTicks(stat string) (times [4]time.Duration, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return times, fmt.Errorf("parse /proc stat: no command name in %q", tail(stat, 80))
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return times, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 15", len(f))
	}
	for k, s := range f[11:15] { // fields 14 (utime) to 17 (cstime)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return [4]time.Duration{}, fmt.Errorf("parse /proc stat: cpu ticks %q", s)
		}
		times[k] = time.Duration(n) * time.Second / userHZ
	}
	return times, nil
}

// readTreeCPU is the CPU time (user + system) that process pid and its
// children have used so far: each live child's own and its reaped
// children's (utime + stime + cutime + cstime), then pid's own with what
// its reaped children used. For PostgreSQL's postmaster that is the whole
// server: backends and auxiliary processes are its children, and one
// that exits moves from the live children into the postmaster's cutime
// and cstime when it is reaped.
func readTreeCPU(pid int) (time.Duration, error) { return treeCPU(procFS{}, pid) }

// treeProc is what treeCPU reads of a process tree: procFS reads /proc.
type treeProc interface {
	children(pid int) ([]int, error)
	// stat is utime, stime, cutime and cstime; an error wrapping
	// fs.ErrNotExist or ESRCH means the process is gone.
	stat(pid int) ([4]time.Duration, error)
}

// treeCPU is readTreeCPU over p. The parent is read before and after its
// children, and the reading is taken only if the parent's cutime and
// cstime did not move in between: a child reaped during the reading would
// otherwise be counted twice (its own stat read, then in the parent's
// cutime), or not at all. At the end of a direct run every backend exits
// at once, which makes that likely: the likely source of a section-2 run
// of 2.05 CPUs busy on a 2-CPU machine (docs/benchmarks-passes.md,
// forty-fourth pass).
func treeCPU(p treeProc, pid int) (time.Duration, error) {
	const attempts = 1000 // each a few hundred microseconds; exits end
	for range attempts {
		before, err := p.stat(pid)
		if err != nil {
			return 0, err
		}
		kids, err := p.children(pid)
		if err != nil {
			return 0, err
		}
		var total time.Duration
		for _, child := range kids {
			t, err := p.stat(child)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue // reaped since the listing: the parent's cutime moved
			}
			if err != nil {
				return 0, err
			}
			total += t[0] + t[1] + t[2] + t[3]
		}
		after, err := p.stat(pid)
		if err != nil {
			return 0, err
		}
		if after[2]+after[3] == before[2]+before[3] {
			return total + after[0] + after[1] + after[2] + after[3], nil
		}
	}
	return 0, fmt.Errorf("cpu time of %d and its children: children kept being reaped over %d readings", pid, attempts)
}

// procFS reads a process tree from /proc.
type procFS struct{}

func (procFS) children(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil, fmt.Errorf("read children: %w", err)
	}
	f := strings.Fields(string(b))
	kids := make([]int, 0, len(f))
	for _, s := range f {
		child, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("read children of %d: %q is not a pid", pid, s)
		}
		kids = append(kids, child)
	}
	return kids, nil
}

func (procFS) stat(pid int) ([4]time.Duration, error) { return readStatTicks(pid) }

// readStatTicks is parseStatTicks of /proc/PID/stat.
func readStatTicks(pid int) ([4]time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return [4]time.Duration{}, fmt.Errorf("read cpu time: %w", err)
	}
	return parseStatTicks(string(b))
}

// readCtxSwitches is the number of context switches, voluntary and
// involuntary, of every thread of process pid so far. The kernel counts
// them per thread (/proc/PID/status shows the main thread's only), so this
// sums /proc/PID/task/*/status; a thread that exits takes its count with
// it, which for the poolers' long-lived threads does not happen in a run.
func readCtxSwitches(pid int) (int64, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("read context switches: %w", err)
	}
	var total int64
	for _, t := range tasks {
		f, err := os.Open(filepath.Join(dir, t.Name(), "status"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread exited after the listing
		}
		if err != nil {
			return 0, fmt.Errorf("read context switches: %w", err)
		}
		n, err := parseCtxSwitches(f)
		f.Close()
		if errors.Is(err, syscall.ESRCH) {
			continue // it exited between open and read
		}
		if err != nil {
			return 0, fmt.Errorf("task %s: %w", t.Name(), err)
		}
		total += n
	}
	return total, nil
}

// parseCtxSwitches adds voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches of one /proc/.../status file.
func parseCtxSwitches(r io.Reader) (int64, error) {
	var total int64
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "voluntary_ctxt_switches" && key != "nonvoluntary_ctxt_switches") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("parse %s: %q is not a count", key, strings.TrimSpace(value))
		}
		total += n
		seen++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read status: %w", err)
	}
	if seen != 2 {
		return 0, fmt.Errorf("status has %d of the two context switch lines", seen)
	}
	return total, nil
}
