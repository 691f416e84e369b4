package harness

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	rest := " 0 0 0 -1 4194560 100 0 0 0 %s %s 0 0 20 0 4 0 1 2 3"
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr string
	}{
		{name: "plain", stat: "42 (pgbouncer) S 1" + sprintf(rest, "150", "50"), want: 2 * time.Second},
		{name: "name with spaces and parens", stat: "7 (a) b (c)) R 1" + sprintf(rest, "1", "2"), want: 30 * time.Millisecond},
		{name: "no name", stat: "42 pgbouncer S", wantErr: "no command name"},
		{name: "short", stat: "42 (x) S 1 2 3", wantErr: "fields after the command name"},
		{name: "not a number", stat: "42 (x) S 1" + sprintf(rest, "x", "2"), wantErr: `cpu ticks "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStatCPU(tt.stat)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
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
