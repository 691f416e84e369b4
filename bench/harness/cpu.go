package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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
