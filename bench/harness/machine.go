package harness

import (
	"bufio"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs       int
	CPUModel   string
	MemTotal   string // as /proc/meminfo says, e.g. "24683520 kB"
	Kernel     string
	Postgres   string // version()
	PgBouncer  string
	Pgbench    string
	GoVersion  string // of the pg_doorman binary
	Commit     string // git commit of the repository, "+dirty" when modified
	LoadBefore string // /proc/loadavg at start
	LoadAfter  string // and at the end
}

// describeMachine fills everything but Postgres and LoadAfter; missing
// facts read "unknown" rather than failing the benchmark.
func describeMachine(s Settings, pgbenchBin string) Machine {
	m := Machine{
		CPUs:       runtime.NumCPU(),
		CPUModel:   procField("/proc/cpuinfo", "model name"),
		MemTotal:   procField("/proc/meminfo", "MemTotal"),
		Kernel:     readTrimmed("/proc/sys/kernel/osrelease"),
		PgBouncer:  firstLine(s.PgBouncerBin, "--version"),
		Pgbench:    firstLine(pgbenchBin, "--version"),
		GoVersion:  "unknown",
		Commit:     gitCommit(s.RepoDir),
		LoadBefore: loadAverage(),
	}
	if info, err := buildinfo.ReadFile(s.DoormanBin); err == nil {
		m.GoVersion = info.GoVersion
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// loadAverage is the 1, 5 and 15 minute load average.
func loadAverage() string {
	f := strings.Fields(readTrimmed("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func firstLine(prog string, args ...string) string {
	out, err := exec.Command(prog, args...).Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

func gitCommit(dir string) string {
	commit := firstLine("git", "-C", dir, "rev-parse", "--short=12", "HEAD")
	if status, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(status) > 0 {
		commit += "+dirty"
	}
	return commit
}

// String is the machine's one-line summary for the progress output.
func (m Machine) String() string {
	return fmt.Sprintf("%d x %s, %s, load %s", m.CPUs, m.CPUModel, m.MemTotal, m.LoadBefore)
}
