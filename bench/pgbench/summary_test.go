package pgbench

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		want       Summary
	}{
		{name: "unthrottled", file: "testdata/select_only.out", want: Summary{
			Clients: 4, Threads: 2, QueryMode: "simple", Processed: 59567, Failed: 0,
			LatencyAvgMS: 0.131, ConnTimeMS: 49.517, TPS: 30453.850149,
		}},
		// -R adds "latency stddev" and "rate limit schedule lag: avg A (max B) ms",
		// which the parser skips; the average latency then counts from the
		// scheduled start.
		{name: "with -R", file: "testdata/select_only_rate.out", want: Summary{
			Clients: 20, Threads: 2, QueryMode: "simple", Processed: 593, Failed: 0,
			LatencyAvgMS: 0.373, ConnTimeMS: 29.816, TPS: 199.931154,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(tt.file)
			require.NoError(t, err)
			defer f.Close()
			s, err := ParseSummary(f)
			require.NoError(t, err)
			require.Equal(t, tt.want, s)
		})
	}
}

func TestParseSummaryLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Summary
		wantErr string
	}{
		{name: "with -t", in: "number of transactions actually processed: 400/1000\ntps = 1.5 (without initial connection time)\n",
			want: Summary{Processed: 400, TPS: 1.5}},
		{name: "failures", in: "number of failed transactions: 12 (0.123%)\ntps = 2\n", want: Summary{Failed: 12, TPS: 2}},
		{name: "no tps", in: "number of clients: 4\n", wantErr: "no tps line"},
		{name: "empty", in: "", wantErr: "no tps line"},
		{name: "bad number", in: "number of clients: many\ntps = 1\n", wantErr: `line "number of clients: many"`},
		{name: "bad tps", in: "tps = fast\n", wantErr: "tps = fast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSummary(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, s)
		})
	}
}

func TestParseStderr(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/prepared_pgbouncer.err")
	require.NoError(t, err)
	defer f.Close()
	s, err := ParseStderr(f)
	require.NoError(t, err)
	require.Equal(t, Stderr{
		AbortedClients: 3,
		RunAborted:     true,
		Errors: []string{
			`ERROR: prepared statement "P_0" already exists`,
			`ERROR: prepared statement "P_0" does not exist`,
		},
	}, s)
}

func TestParseStderrKeepsAtMostMaxErrors(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 3 * maxErrors {
		b.WriteString("pgbench: error: FATAL:  error number " + strings.Repeat("x", i) + "\n")
	}
	s, err := ParseStderr(strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Len(t, s.Errors, maxErrors)
	require.Equal(t, "FATAL: error number ", s.Errors[0])
	require.Zero(t, s.AbortedClients)
	require.False(t, s.RunAborted)
}

func FuzzParseSummary(f *testing.F) {
	b, err := os.ReadFile("testdata/select_only.out")
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte("tps = 1e308\nnumber of clients: -1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseSummary(strings.NewReader(string(in)))
		if err == nil {
			again, err := ParseSummary(strings.NewReader(string(in)))
			require.NoError(t, err)
			require.Equal(t, s, again)
		}
		_, _ = ParseStderr(strings.NewReader(string(in)))
	})
}
