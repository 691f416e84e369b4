package patronisbx

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Patronictl runs patronictl against the sandbox (sandbox/pctl.sh) and
// returns its combined output; safe to call off the test goroutine.
func (s *Sandbox) Patronictl(ctx context.Context, args ...string) (string, error) {
	out, err := s.script(ctx, nil, "pctl.sh", args...)
	if err != nil {
		return out, fmt.Errorf("patronictl %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// Switchover runs `patronictl switchover --candidate candidate --force`
// until Patroni takes it, and returns patronictl's output. patronictl
// exits 0 when Patroni refuses, so the output tells. "no good candidates"
// (412) is tried again every second: a fresh-clone CI run got it for the
// first switchover on a cluster that had just become healthy, without a
// cause Patroni would name. Any other "Switchover failed" is an error.
func (s *Sandbox) Switchover(ctx context.Context, candidate string) (string, error) {
	for {
		out, err := s.Patronictl(ctx, "switchover", "--candidate", candidate, "--force")
		switch {
		case err != nil:
			return out, err
		case strings.Contains(out, "no good candidates"):
		case strings.Contains(out, "Switchover failed"):
			return out, fmt.Errorf("patronictl switchover to %s refused:\n%s", candidate, out)
		default:
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("switchover to %s: %w", candidate, ctx.Err())
		case <-time.After(time.Second): // pacing of the retry: Patroni's members report every loop_wait
		}
	}
}

// SwitchoverT is Switchover for the test goroutine (at most 2 minutes).
func (s *Sandbox) SwitchoverT(t testing.TB, candidate string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.Switchover(ctx, candidate)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// Pctl is Patronictl for the test goroutine (at most 2 minutes).
func (s *Sandbox) Pctl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.Patronictl(ctx, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// StopPostgres stops node's PostgreSQL behind Patroni's back with
// `pg_ctl stop -m fast` (as the postgres user when root) and returns once
// the server is down. Patroni notices on its next HA loop and starts it
// again.
func (s *Sandbox) StopPostgres(t testing.TB, node Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(PGBin, "pg_ctl"), "stop", "-D", node.DataDir, "-m", "fast", "-w", "-t", "50")
	cmd.Dir = filepath.Dir(node.DataDir)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	cred, err := runCredential()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop %s: %v\n%s", node.Name, err, out)
	}
}

// KillPostmaster sends SIGKILL to node's postmaster (the pid in
// data/postmaster.pid, checked against its command line) and waits until
// it is gone. It returns the pid. Its backends exit by themselves once they
// notice; Patroni restarts the server (in place on a leader, unless
// primary_start_timeout is 0: see the sandbox README's pitfall 4).
func (s *Sandbox) KillPostmaster(t testing.TB, node Node) int {
	t.Helper()
	pid, err := s.PostmasterPID(node)
	if err != nil {
		t.Fatalf("kill postmaster of %s: %v", node.Name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill postmaster %d of %s: %v", pid, node.Name, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("postmaster %d of %s still alive 10s after SIGKILL", pid, node.Name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return pid
}

// PostmasterPID returns the pid of node's running postmaster, from
// data/postmaster.pid checked against the process's command line.
func (s *Sandbox) PostmasterPID(node Node) (int, error) { return postmasterPID(node.DataDir) }

// postmasterPID reads dataDir/postmaster.pid and checks that the process
// is a postgres serving dataDir, so that nothing else is ever signalled.
func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("bad postmaster.pid %q", line)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("postmaster %d is not running: %w", pid, err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if filepath.Base(args[0]) != "postgres" || !strings.Contains(string(cmdline), dataDir) {
		return 0, fmt.Errorf("pid %d is not the postmaster of %s: %q", pid, dataDir, args)
	}
	return pid, nil
}

// alive reports whether pid runs; a zombie counts as dead.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// runCredential is the postgres user when we are root, else nil (ourselves).
func runCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(RunUser)
	if err != nil {
		return nil, fmt.Errorf("running as root needs the %s OS user: %w", RunUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
