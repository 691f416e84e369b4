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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read cpu time: %w", err)
	}
	return parseStatTimes(string(b))
}

// parseStatCPU reads utime + stime from the text of /proc/PID/stat.
func parseStatCPU(stat string) (time.Duration, error) {
	user, sys, err := parseStatTimes(stat)
	return user + sys, err
}

// parseStatTimes reads utime and stime (fields 14 and 15) from the text of
// /proc/PID/stat. The command name (field 2) is in parentheses and may hold
// spaces and parentheses itself, so fields are counted after the last ")".
func parseStatTimes(stat string) (user, sys time.Duration, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse /proc stat: no command name in %q", tail(stat, 80))
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks [2]int64
	for k, s := range f[11:13] { // fields 14 (utime) and 15 (stime)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("parse /proc stat: cpu ticks %q", s)
		}
		ticks[k] = n
	}
	return time.Duration(ticks[0]) * time.Second / userHZ, time.Duration(ticks[1]) * time.Second / userHZ, nil
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
