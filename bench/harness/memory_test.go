package harness

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Memory
		wantErr string
	}{
		{name: "linux status", in: "Name:\tpgbouncer\nVmPeak:\t  20000 kB\nVmHWM:\t    9000 kB\nVmRSS:\t    8600 kB\nThreads:\t1\n",
			want: Memory{RSS: 8600 << 10, Peak: 9000 << 10}},
		{name: "missing VmHWM", in: "VmRSS:\t 1 kB\n", wantErr: "no VmRSS or VmHWM"},
		{name: "kernel thread has neither", in: "Name:\tkthreadd\n", wantErr: "no VmRSS or VmHWM"},
		{name: "bad unit", in: "VmRSS:\t 1 MB\nVmHWM:\t 1 kB\n", wantErr: "want <number> kB"},
		{name: "bad number", in: "VmRSS:\t x kB\nVmHWM:\t 1 kB\n", wantErr: `status line "VmRSS:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := parseStatus(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, m)
		})
	}
}

func TestReadMemoryOfSelf(t *testing.T) {
	t.Parallel()
	m, err := readMemory(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, m.RSS)
	require.GreaterOrEqual(t, m.Peak, m.RSS)
}

func TestIdlePerClient(t *testing.T) {
	t.Parallel()
	r := IdleResult{Opened: 2000, Before: Memory{RSS: 10 << 20}, AtOnce: Memory{RSS: 10<<20 + 2000*1024}, After: Memory{RSS: 10<<20 + 2000*512}}
	require.InDelta(t, 512, r.PerClient(), 1e-9)
	require.InDelta(t, 1024, r.PerClientAtOnce(), 1e-9)
	require.Zero(t, IdleResult{}.PerClient())
	require.Zero(t, IdleResult{}.PerClientAtOnce())
	require.EqualValues(t, 1<<20, IdleResult{Started: Memory{RSS: 9 << 20}, Before: Memory{RSS: 10 << 20}}.FirstClient())
}
