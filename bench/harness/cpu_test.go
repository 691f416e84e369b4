package harness

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStatTicks(t *testing.T) {
	t.Parallel()
	rest := " 0 0 0 -1 4194560 100 0 0 0 %s %s %s %s 20 0 4 0 1 2 3"
	ms := time.Millisecond
	tests := []struct {
		name    string
		stat    string
		want    [4]time.Duration
		wantErr string
	}{
		{name: "plain", stat: "42 (pgbouncer) S 1" + sprintf(rest, "150", "50", "0", "0"), want: [4]time.Duration{1500 * ms, 500 * ms}},
		{name: "reaped children", stat: "42 (postgres) S 1" + sprintf(rest, "1", "2", "300", "4"), want: [4]time.Duration{10 * ms, 20 * ms, 3000 * ms, 40 * ms}},
		{name: "name with spaces and parens", stat: "7 (a) b (c)) R 1" + sprintf(rest, "1", "2", "3", "4"), want: [4]time.Duration{10 * ms, 20 * ms, 30 * ms, 40 * ms}},
		{name: "no name", stat: "42 pgbouncer S", wantErr: "no command name"},
		{name: "short", stat: "42 (x) S 1 2 3", wantErr: "fields after the command name"},
		{name: "no cstime", stat: "42 (x) S 1 0 0 0 -1 4194560 100 0 0 0 1 2 3", wantErr: "want at least 15"},
		{name: "not a number", stat: "42 (x) S 1" + sprintf(rest, "x", "2", "0", "0"), wantErr: `cpu ticks "x"`},
		{name: "negative cutime", stat: "42 (x) S 1" + sprintf(rest, "1", "2", "-3", "0"), wantErr: `cpu ticks "-3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStatTicks(tt.stat)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestReadTreeCPUCountsChildren: a child that burns CPU is counted while
// it runs and, once reaped, through the parent's cutime and cstime. The
// parent is a shell whose only work is to start the child and wait.
func TestReadTreeCPUCountsChildren(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	// The child loops until the gate file exists, then exits; the shell
	// reaps it and waits on stdin (a pipe the test closes at the end).
	cmd := exec.Command("sh", "-c", `sh -c 'while [ ! -e "$1" ]; do :; done' sh "$1"; read x`, "sh", gate)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	childrenOf := func() string {
		b, err := os.ReadFile(sprintf("/proc/%d/task/%d/children", pid, pid))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}

	deadline := time.Now().Add(20 * time.Second)
	var live time.Duration
	for live < 50*time.Millisecond { // the child's CPU, counted as a live child
		require.True(t, time.Now().Before(deadline), "the busy child's CPU never showed (%v)", live)
		live, err = readTreeCPU(pid)
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
	}
	require.NotEmpty(t, childrenOf(), "the busy child is not listed")
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	for childrenOf() != "" { // reaped: the shell waits in read now
		require.True(t, time.Now().Before(deadline), "the child did not end")
		time.Sleep(10 * time.Millisecond)
	}
	after, err := readTreeCPU(pid)
	require.NoError(t, err)
	require.GreaterOrEqual(t, after, live, "the reaped child's CPU was lost (it is in the parent's cutime)")
}

func TestReadCPUSelf(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(10 * time.Second)
	for x := 0; ; x++ { // burn CPU until the kernel has counted a tick
		cpu, err := readCPU(os.Getpid())
		require.NoError(t, err)
		if cpu > 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "no CPU time counted for this process after 10 s of work")
		for i := 0; i < 1e6; i++ {
			x ^= i
		}
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// reapingProc is a parent with children, one of which is reaped after
// the parent's process table has been read a given number of times: its
// ticks move into the parent's cutime and cstime, as the kernel does.
type reapingProc struct {
	parent    [4]time.Duration
	kids      map[int][4]time.Duration
	reap      int // the child to reap
	reapAfter int // after this many reads (stat and children calls); 0: before

	reads int
}

func (p *reapingProc) tick() {
	p.reads++
	if p.reads == p.reapAfter {
		p.reapNow()
	}
}

func (p *reapingProc) reapNow() {
	t := p.kids[p.reap]
	delete(p.kids, p.reap)
	p.parent[2] += t[0] + t[2]
	p.parent[3] += t[1] + t[3]
}

func (p *reapingProc) children(int) ([]int, error) {
	defer p.tick()
	kids := make([]int, 0, len(p.kids))
	for pid := range p.kids {
		kids = append(kids, pid)
	}
	sort.Ints(kids)
	return kids, nil
}

func (p *reapingProc) stat(pid int) ([4]time.Duration, error) {
	defer p.tick()
	if pid == 1 {
		return p.parent, nil
	}
	t, ok := p.kids[pid]
	if !ok {
		return t, fmt.Errorf("read cpu time: %w", fs.ErrNotExist)
	}
	return t, nil
}

// TestTreeCPUChildReapedWhileReading: whenever a child is reaped during
// the reading (before the parent's first read, between the listing and
// the child's read, between the child's read and the parent's second
// read), its CPU is counted once. Reading the children and then the
// parent once counted it twice in the last case.
func TestTreeCPUChildReapedWhileReading(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Reads in one attempt: parent (1), children (2), child 2 (3),
	// child 3 (4), parent (5).
	for _, tc := range []struct {
		name      string
		reap      int
		reapAfter int
	}{
		{"no reap", 2, 1000},
		{"before the first read", 2, 0},
		{"after the parent's first read", 2, 1},
		{"between the listing and its read", 3, 2},
		{"between its read and the parent's", 2, 3},
		{"just before the parent's second read", 3, 4},
		{"after the reading", 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &reapingProc{
				parent: [4]time.Duration{ms(10), ms(20), ms(30), ms(40)},
				kids: map[int][4]time.Duration{
					2: {ms(100), ms(200), ms(5), ms(6)},
					3: {ms(1000), ms(2000), 0, 0},
				},
				reap: tc.reap, reapAfter: tc.reapAfter,
			}
			if tc.reapAfter == 0 {
				p.reapNow()
			}
			got, err := treeCPU(p, 1)
			require.NoError(t, err)
			require.Equal(t, ms(10+20+30+40+100+200+5+6+1000+2000), got)
		})
	}
}

// churningProc's parent reaps a child between every two reads of it.
type churningProc struct{ cutime time.Duration }

func (p *churningProc) children(int) ([]int, error) { return nil, nil }

func (p *churningProc) stat(int) ([4]time.Duration, error) {
	p.cutime += time.Millisecond
	return [4]time.Duration{0, 0, p.cutime, 0}, nil
}

// TestTreeCPUGivesUp: a parent whose children never stop being reaped
// ends in an error after a bounded number of readings, not a hang.
func TestTreeCPUGivesUp(t *testing.T) {
	t.Parallel()
	_, err := treeCPU(&churningProc{}, 1)
	require.ErrorContains(t, err, "children kept being reaped")
}
