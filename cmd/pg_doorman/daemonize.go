package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"go.uber.org/zap"
)

const daemonEnv = "PG_DOORMAN_DAEMONIZED"

// daemonizeSelf starts this binary again in a new session with stdio on
// /dev/null, writes its PID to pidFile and returns the exit code for the
// parent. Go cannot fork safely, so re-exec is the way.
func daemonizeSelf(pidFile string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg_doorman: daemonize:", err)
		return 1
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg_doorman: daemonize:", err)
		return 1
	}
	defer null.Close()
	env := append(os.Environ(), daemonEnv+"=1")
	p, err := os.StartProcess(exe, os.Args, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{null, null, null},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg_doorman: daemonize:", err)
		return 1
	}
	if pidFile != "" {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.Pid)+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "pg_doorman: write pid file:", err)
			return 1
		}
	}
	fmt.Printf("pg_doorman started in background, pid %d\n", p.Pid)
	return 0
}

// removePIDFile removes pidFile if it still holds pid (a newer process may
// have written its own since).
func removePIDFile(pidFile string, pid int, log *zap.Logger) {
	b, err := os.ReadFile(pidFile)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		return
	}
	if err := os.Remove(pidFile); err != nil {
		log.Warn("remove pid file", zap.String("path", pidFile), zap.Error(err))
	}
}
