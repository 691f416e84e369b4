package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPgbenchArgs(t *testing.T) {
	t.Parallel()
	base := runSpec{port: 6432, db: benchDB, script: ScriptSelectOnly, mode: "simple", clients: 200, jobs: 2, dur: 17 * time.Second}
	with := func(f func(*runSpec)) runSpec { s := base; f(&s); return s }
	lead := "-h 127.0.0.1 -p 6432 -U " + benchUser + " -b select-only -M simple -c 200 -j 2 -l --log-prefix=/tmp/x/tx " + benchDB
	tests := []struct {
		name string
		spec runSpec
		want string // after lead
	}{
		{name: "-T", spec: base, want: " -T 17"},
		{name: "-R", spec: with(func(s *runSpec) { s.rate = 1300 }), want: " -R 1300 -T 17"},
		{name: "-C and -t", spec: with(func(s *runSpec) { s.connect, s.txs = true, 5 }), want: " -C -t 5"},
		{name: "a window adds nothing", spec: with(func(s *runSpec) { s.rate, s.window, s.poolerPID = 500, 12*time.Second, 42 }), want: " -R 500 -T 17"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, lead+tt.want, strings.Join(pgbenchArgs(tt.spec, "/tmp/x/tx"), " "))
		})
	}
}

func TestPgbenchArgsJobs(t *testing.T) {
	t.Parallel()
	args := strings.Join(pgbenchArgs(runSpec{script: ScriptTPCB, mode: "extended", clients: 1, jobs: 2, txs: 1}, "tx"), " ")
	require.Contains(t, args, "-c 1 -j 1 ", "threads capped by clients")
}
