package harness

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SyscallCount is one line of strace -c: how often a system call was made
// and how often it failed.
type SyscallCount struct {
	Name   string
	Calls  int64
	Errors int64 `json:",omitempty"`
}

// Syscall groups of the report, in its column order; everything else is
// "other".
var syscallGroups = []struct {
	name  string
	calls []string
}{
	{"read/recvfrom", []string{"read", "readv", "recvfrom", "recvmsg", "recvmmsg"}},
	{"write/sendto", []string{"write", "writev", "sendto", "sendmsg", "sendmmsg"}},
	{"epoll*", []string{"epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "epoll_create", "epoll_create1"}},
	{"futex", []string{"futex", "futex_waitv"}},
	{"nanosleep", []string{"nanosleep", "clock_nanosleep"}},
}

// syscallGroup is the report group of system call name.
func syscallGroup(name string) string {
	for _, g := range syscallGroups {
		for _, c := range g.calls {
			if c == name {
				return g.name
			}
		}
	}
	return "other"
}

// parseStraceCount reads the table strace -c writes:
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 50.24    0.049536           2     18284        12 read
//	------ ----------- ----------- --------- --------- ----------------
//	100.00    0.098598           2     36567        12 total
//
// The errors column is blank for calls that never failed; the total line
// is left out. Lines before the header (strace's own messages) are skipped.
func parseStraceCount(r io.Reader) ([]SyscallCount, error) {
	var out []SyscallCount
	header := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "% time"):
			header = true
			continue
		case !header || line == "" || strings.HasPrefix(line, "---"):
			continue
		}
		f := strings.Fields(line)
		name := f[len(f)-1]
		if name == "total" {
			continue
		}
		// % time, seconds, usecs/call, calls[, errors]
		if len(f) != 5 && len(f) != 6 {
			return nil, fmt.Errorf("strace -c line %q: want 5 or 6 columns", line)
		}
		c := SyscallCount{Name: name}
		var err error
		if c.Calls, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return nil, fmt.Errorf("strace -c line %q: calls: %w", line, err)
		}
		if len(f) == 6 {
			if c.Errors, err = strconv.ParseInt(f[4], 10, 64); err != nil {
				return nil, fmt.Errorf("strace -c line %q: errors: %w", line, err)
			}
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read strace -c output: %w", err)
	}
	if !header {
		return nil, fmt.Errorf("strace -c output has no table")
	}
	return out, nil
}
