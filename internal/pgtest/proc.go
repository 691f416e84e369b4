package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pollInterval is how often the harness re-checks a condition it waits for.
const pollInterval = 10 * time.Millisecond

// procStat returns the state letter and parent pid of a process from
// /proc/<pid>/stat; ok is false when the process does not exist.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may contain anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 2 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0][0], ppid, true
}

// alive reports whether pid is running. Zombies count as dead: in containers
// whose init does not reap, orphaned backends stay zombies forever.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// children lists the live processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid, ok := procStat(n); ok && ppid == pid && state != 'Z' {
			out = append(out, n)
		}
	}
	return out
}

// waitDead polls until none of pids is alive.
func waitDead(ctx context.Context, pids ...int) error {
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("processes %v still alive: %w", left, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// postmasterPID reads the first line of <data>/postmaster.pid.
func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("read postmaster.pid: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("parse postmaster.pid %q: %w", line, errors.Join(err, errors.New("bad pid")))
	}
	return pid, nil
}

// isPostmasterOf reports whether pid is a postgres process serving dataDir,
// so that nothing but our own servers is ever killed by pid file contents.
func isPostmasterOf(pid int, dataDir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) == 0 || filepath.Base(args[0]) != "postgres" {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-D" && filepath.Clean(args[i+1]) == filepath.Clean(dataDir) {
			return true
		}
	}
	return false
}

// killTree sends SIGKILL to a postmaster and its children and waits until
// they are gone. The postmaster is stopped first so it cannot fork a child
// we would miss.
func killTree(ctx context.Context, pid int) error {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	kids := children(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill postmaster %d: %w", pid, err)
	}
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL) // may have exited already
	}
	return waitDead(ctx, append(kids, pid)...)
}
