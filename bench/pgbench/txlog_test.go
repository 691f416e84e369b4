package pgbench

import (
	"strings"
	"testing"
	"time"

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
		{name: "bad end time", in: "0 1 5 0 17x 2\n", wantErr: `line 1: time_epoch "17x"`},
		{name: "microseconds out of range", in: "0 1 5 0 1 1000000\n", wantErr: `time_us "1000000"`},
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

func TestReadLatenciesIn(t *testing.T) {
	t.Parallel()
	// Lines of pgbench 15 with -R (schedule_lag in the 7th column): the
	// transactions ended at 1796188395.100000, .900000, 1796188396.000000,
	// .999999 and 1796188397.000000.
	in := "0 1 897 0 1796188395 100000 57\n" +
		"1 1 906 0 1796188395 900000 101\n" +
		"0 2 952 0 1796188396 0 116\n" +
		"1 2 failed 0 1796188396 999999 3\n" +
		"0 3 880 0 1796188397 0 90\n"
	at := func(sec, us int64) time.Time { return time.Unix(sec, us*1000) }
	tests := []struct {
		name string
		w    Window
		want TxLog
	}{
		{name: "zero window holds every line", w: Window{}, want: TxLog{Latencies: []int64{897, 906, 952, 880}, Failed: 1}},
		{name: "from inclusive, to exclusive", w: Window{From: at(1796188395, 900000), To: at(1796188397, 0)},
			want: TxLog{Latencies: []int64{906, 952}, Failed: 1}},
		{name: "one second", w: Window{From: at(1796188396, 0), To: at(1796188397, 0)},
			want: TxLog{Latencies: []int64{952}, Failed: 1}},
		{name: "before every line", w: Window{From: at(1796188300, 0), To: at(1796188395, 100000)}, want: TxLog{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log TxLog
			require.NoError(t, ReadLatenciesIn(strings.NewReader(in), tt.w, &log))
			require.Equal(t, tt.want, log)
		})
	}
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
