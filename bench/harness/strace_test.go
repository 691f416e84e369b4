package harness

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseStraceCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string // testdata, captured from real strace -c -f -p runs (BENCH_KEEP=1)
		text    string
		want    map[string]SyscallCount
		calls   int
		wantErr string
	}{
		{name: "pgbouncer", file: "strace_pgbouncer.txt", calls: 11, want: map[string]SyscallCount{
			"sendto": {Name: "sendto", Calls: 10054}, "accept": {Name: "accept", Calls: 18, Errors: 7},
		}},
		{name: "pg_doorman, wider syscall column", file: "strace_doorman.txt", calls: 16, want: map[string]SyscallCount{
			"read": {Name: "read", Calls: 17497, Errors: 7400}, "futex": {Name: "futex", Calls: 723, Errors: 22},
			"nanosleep": {Name: "nanosleep", Calls: 912},
		}},
		{name: "messages before the table", text: "strace: Process 1 attached\n% time     seconds  usecs/call     calls    errors syscall\n" +
			"------ ----------- ----------- --------- --------- ----------------\n 100.00    0.000001           1         3         1 read\n",
			calls: 1, want: map[string]SyscallCount{"read": {Name: "read", Calls: 3, Errors: 1}}},
		{name: "no table", text: "strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n", wantErr: "no table"},
		{name: "bad calls", text: "% time     seconds  usecs/call     calls    errors syscall\n 1.0 0.1 1 many read\n", wantErr: "calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := fixture(t, tt.file, tt.text)
			got, err := parseStraceCount(strings.NewReader(text))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, tt.calls, "every line but total")
			byName := map[string]SyscallCount{}
			for _, c := range got {
				byName[c.Name] = c
			}
			require.NotContains(t, byName, "total")
			for name, c := range tt.want {
				require.Equal(t, c, byName[name])
			}
		})
	}
}

// fixture is the text of testdata file, or text when file is "".
func fixture(t *testing.T, file, text string) string {
	t.Helper()
	if file == "" {
		return text
	}
	b, err := os.ReadFile("testdata/" + file)
	require.NoError(t, err)
	return string(b)
}

func TestSyscallResultPerTx(t *testing.T) {
	t.Parallel()
	calls, err := parseStraceCount(strings.NewReader(fixture(t, "strace_doorman.txt", "")))
	require.NoError(t, err)
	r := SyscallResult{Txs: 5000, Calls: calls}
	require.InDelta(t, (17497.0+107)/5000, r.PerTx("read/recvfrom"), 1e-9, "read and recvfrom")
	require.InDelta(t, (7400.0+107)/5000, r.ReadErrorsPerTx(), 1e-9)
	require.InDelta(t, 10064.0/5000, r.PerTx("write/sendto"), 1e-9)
	require.InDelta(t, (2600.0+22)/5000, r.PerTx("epoll*"), 1e-9)
	require.InDelta(t, 723.0/5000, r.PerTx("futex"), 1e-9)
	require.InDelta(t, 912.0/5000, r.PerTx("nanosleep"), 1e-9)
	other := 125.0 + 132 + 18 + 1 + 11 + 11 + 1 + 1 + 1
	require.InDelta(t, other/5000, r.PerTx("other"), 1e-9)
	require.Zero(t, SyscallResult{Calls: calls}.PerTx("futex"), "no transactions")
}
