package pgbench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadLatencies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    TxLog
		wantErr string
	}{
		{name: "pgbench 15 lines", in: "0 1 11245 0 1795969471 142944\n1 1 12951 0 1795969471 144667\n",
			want: TxLog{Latencies: []int64{11245, 12951}}},
		{name: "with lag and retries", in: "3 7 261 0 1795969471 136187 12 0\n", want: TxLog{Latencies: []int64{261}}},
		{name: "failed and skipped", in: "0 1 failed 0 1 2\n0 2 serialization 0 1 2\n0 3 deadlock 0 1 2\n0 4 skipped 0 1 2\n0 5 9 0 1 2\n",
			want: TxLog{Latencies: []int64{9}, Failed: 3, Skipped: 1}},
		{name: "blank lines", in: "\n0 1 5 0 1 2\n\n", want: TxLog{Latencies: []int64{5}}},
		{name: "short line", in: "0 1 5\n", wantErr: "line 1: 3 fields"},
		{name: "bad time", in: "0 1 5 0 1 2\n0 2 soon 0 1 2\n", wantErr: `line 2: time "soon"`},
		{name: "negative time", in: "0 1 -5 0 1 2\n", wantErr: `time "-5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log TxLog
			err := ReadLatencies(strings.NewReader(tt.in), &log)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, log)
		})
	}
}

func TestReadLatenciesAppends(t *testing.T) {
	t.Parallel()
	log := TxLog{Latencies: []int64{1}, Failed: 1}
	require.NoError(t, ReadLatencies(strings.NewReader("0 1 2 0 1 2\n0 2 failed 0 1 2\n"), &log))
	require.Equal(t, TxLog{Latencies: []int64{1, 2}, Failed: 2}, log)
}

func FuzzReadLatencies(f *testing.F) {
	f.Add([]byte("0 1 11245 0 1795969471 142944\n"))
	f.Add([]byte("0 1 failed 0 1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var log TxLog
		if err := ReadLatencies(strings.NewReader(string(in)), &log); err != nil {
			return
		}
		for _, us := range log.Latencies {
			require.GreaterOrEqual(t, us, int64(0))
		}
	})
}
