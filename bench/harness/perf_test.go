package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParsePerfReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		file            string // testdata, captured from real perf report runs (BENCH_KEEP=1)
		text            string
		samples, kernel int64
		first           Symbol
		top             int
		wantErr         string
	}{
		{name: "pg_doorman", file: "perf_report_doorman.txt", samples: 989, kernel: 835, top: 12,
			first: Symbol{Name: "finish_task_switch.isra.0", Kernel: true, Samples: 276}},
		{name: "pgbouncer", file: "perf_report_pgbouncer.txt", samples: 577, kernel: 548, top: 12,
			first: Symbol{Name: "_raw_spin_unlock_irqrestore", Kernel: true, Samples: 135}},
		{name: "user space and fewer lines than top", text: "# Samples: 3\n#\n    66.67%  2  [.] runtime.mallocgc\n    33.33%  1  [k] do_syscall_64\n\n",
			samples: 3, kernel: 1, top: 2, first: Symbol{Name: "runtime.mallocgc", Samples: 2}},
		{name: "no samples column", text: "    23.07%  [k] do_syscall_64\n", wantErr: "want <percent>% <samples>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := fixture(t, tt.file, tt.text)
			p, err := parsePerfReport(strings.NewReader(text), 12)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.samples, p.Samples)
			require.Equal(t, tt.kernel, p.KernelSamples)
			require.Len(t, p.Top, tt.top)
			require.Equal(t, tt.first, p.Top[0])
			for i := 1; i < len(p.Top); i++ {
				require.LessOrEqual(t, p.Top[i].Samples, p.Top[i-1].Samples, "most first")
			}
		})
	}
}

func TestProfileCPUPerTx(t *testing.T) {
	t.Parallel()
	r := ProfileResult{Txs: 1000, CPU: 40 * time.Millisecond, Perf: PerfProfile{Samples: 100, KernelSamples: 75}}
	total, kernel, user := r.CPUPerTx()
	require.Equal(t, 40*time.Microsecond, total)
	require.Equal(t, 30*time.Microsecond, kernel)
	require.Equal(t, 10*time.Microsecond, user)
	total, kernel, user = ProfileResult{}.CPUPerTx()
	require.Zero(t, total+kernel+user)
}
