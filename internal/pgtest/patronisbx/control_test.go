package patronisbx

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakePctl makes a sandbox whose pctl.sh prints answers[i] on its i-th
// call (the last one from then on) and records its arguments.
func fakePctl(t *testing.T, answers ...string) (*Sandbox, func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "calls")
	var cases strings.Builder
	for i, a := range answers {
		if i == len(answers)-1 {
			cases.WriteString("*) ")
		} else {
			cases.WriteString(strconv.Itoa(i+1) + ") ")
		}
		cases.WriteString("echo '" + a + "' ;;\n")
	}
	script := "#!/bin/sh\nn=$(($(cat " + count + " 2>/dev/null || echo 0) + 1))\necho $n > " + count +
		"\necho \"$@\" >> " + filepath.Join(dir, "args") + "\ncase $n in\n" + cases.String() + "esac\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pctl.sh"), []byte(script), 0o755))
	calls := func() int {
		b, err := os.ReadFile(count)
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	return &Sandbox{Base: dir, scripts: dir}, calls
}

const (
	noCandidates = "Switchover failed, details: 412, switchover is not possible: no good candidates have been found"
	switched     = "Successfully switched over to \"node2\""
)

func TestSwitchover(t *testing.T) {
	cases := []struct {
		name      string
		answers   []string
		wantErr   bool
		wantCalls int
	}{
		{"taken at once", []string{switched}, false, 1},
		{"no good candidates twice, then taken", []string{noCandidates, noCandidates, switched}, false, 3},
		{"refused for another reason", []string{"Switchover failed, details: 412, candidate name does not match with sync_standby"}, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, calls := fakePctl(t, tc.answers...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := s.Switchover(ctx, "node2")
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				require.Contains(t, out, "Successfully switched over")
			}
			require.Equal(t, tc.wantCalls, calls())
			args, rerr := os.ReadFile(filepath.Join(s.Base, "args"))
			require.NoError(t, rerr)
			require.Contains(t, string(args), "switchover --candidate node2 --force")
		})
	}
}

func TestSwitchoverGivesUpAtItsDeadline(t *testing.T) {
	s, calls := fakePctl(t, noCandidates)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	out, err := s.Switchover(ctx, "node2")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, out, "no good candidates")
	require.GreaterOrEqual(t, calls(), 2, "it tried again before the deadline")
}
