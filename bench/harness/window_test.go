package harness

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/bench/pgbench"
)

// Two threads' -l files of a pgbench -R run (schedule_lag in the 7th
// column); the transactions end at 100.5, 101.0, 101.2, 102.9, 103.0 and
// 104.0 s (Unix time).
var windowLogs = map[string]string{
	"tx.77":   "0 1 900 0 100 500000 50\n0 2 950 0 101 200000 60\n0 3 failed 0 102 900000 10\n",
	"tx.77.1": "1 1 800 0 101 0 40\n1 2 850 0 103 0 45\n1 3 700 0 104 0 30\n",
}

func TestFinishWindow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range windowLogs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	at := func(sec float64) time.Time { return time.Unix(0, int64(sec*1e9)) }
	tests := []struct {
		name      string
		win       windowRun
		res       runResult
		wantTxs   int   // transactions in the window
		wantLat   int64 // their summed times, µs
		wantFails int
		wantErr   string
	}{
		{name: "from inclusive, to exclusive", win: window(at(99), at(101), at(103)),
			wantTxs: 2, wantLat: 950 + 800, wantFails: 1},
		{name: "all of them", win: window(at(99), at(100), at(105)), wantTxs: 5, wantLat: 900 + 950 + 800 + 850 + 700, wantFails: 1},
		{name: "empty window", win: window(at(99), at(105), at(106)), wantErr: "measurement window: no transaction in the -l logs ended between"},
		{name: "pgbench connected after the window started", win: window(at(99), at(100), at(103)),
			res: runResult{Summary: pgbench.Summary{ConnTimeMS: 1500}}, wantErr: "pgbench reports 1.5s to connect its clients, which ends 500ms after the window started"},
		{name: "failed window", win: windowRun{failed: "pgbench exited before the window ended"},
			wantErr: "measurement window: pgbench exited before the window ended"},
		{name: "pgbench failed first", win: window(at(99), at(101), at(103)), res: runResult{Err: "exit code 1"}, wantErr: "exit code 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := tt.res
			require.NoError(t, finishWindow(&res, tt.win, dir))
			if tt.wantErr != "" {
				require.Contains(t, res.Err, tt.wantErr)
				require.Nil(t, res.Window)
				return
			}
			require.Empty(t, res.Err)
			require.NotNil(t, res.Window)
			require.Len(t, res.Window.TxLog.Latencies, tt.wantTxs)
			var sum int64
			for _, us := range res.Window.TxLog.Latencies {
				sum += us
			}
			require.Equal(t, tt.wantLat, sum)
			require.Equal(t, tt.wantFails, res.Window.TxLog.Failed)
		})
	}
}

// window is a measured windowRun of pgbench launched at launch.
func window(launch, from, to time.Time) windowRun {
	return windowRun{WindowResult: WindowResult{From: from, To: to}, launch: launch}
}

func TestWindowTPS(t *testing.T) {
	t.Parallel()
	from := time.Unix(100, 0)
	w := WindowResult{From: from, To: from.Add(2 * time.Second), TxLog: pgbench.TxLog{Latencies: make([]int64, 5)}}
	require.InDelta(t, 2.5, w.TPS(), 1e-9)
	require.Zero(t, WindowResult{From: from, To: from}.TPS())
}

func TestParseCtxSwitches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr string
	}{
		{name: "both", status: "Name:\tpgbouncer\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t1200\nnonvoluntary_ctxt_switches:\t34\n", want: 1234},
		{name: "missing one", status: "voluntary_ctxt_switches:\t1\n", wantErr: "1 of the two context switch lines"},
		{name: "not a count", status: "voluntary_ctxt_switches:\tx\nnonvoluntary_ctxt_switches:\t1\n", wantErr: `voluntary_ctxt_switches: "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseCtxSwitches(strings.NewReader(tt.status))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestReadCtxSwitchesSelf(t *testing.T) {
	t.Parallel()
	before, err := readCtxSwitches(os.Getpid())
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond) // a voluntary switch at least
	after, err := readCtxSwitches(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, after, before)
}

// Not parallel: it counts the sockets of the whole test process.
func TestCountSocketsSelf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	before, err := countSockets(os.Getpid())
	require.NoError(t, err)
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	after, err := countSockets(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	require.Equal(t, before+1, after, "one more socket: the dialled connection")
}
