package harness

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIdleLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		hard    uint64
		capN    int
		counts  []int
		want    []int
		wantMax int
		wantErr string
	}{
		{name: "this machine", hard: 20000, counts: []int{2000, IdleMax}, want: []int{2000, 19000}, wantMax: 19000},
		{name: "cap below the limit", hard: 20000, capN: 500, counts: []int{200, IdleMax}, want: []int{200, 500}, wantMax: 500},
		{name: "cap above the limit does nothing", hard: 20000, capN: 50000, counts: []int{IdleMax}, want: []int{19000}, wantMax: 19000},
		{name: "an explicit count over the limit", hard: 20000, counts: []int{50000}, wantMax: 19000, wantErr: "50000 idle clients need more than the open-file limit of 20000 allows (at most 19000"},
		{name: "unlimited", hard: math.MaxUint64, counts: []int{50000, IdleMax}, want: []int{50000, fileLimitCeiling - idleFDMargin}, wantMax: fileLimitCeiling - idleFDMargin},
		{name: "tiny limit", hard: 100, counts: []int{IdleMax}, want: []int{1}, wantMax: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newIdleLimit(tt.hard, tt.capN)
			require.Equal(t, tt.wantMax, l.Max)
			got, err := l.resolve(tt.counts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestSourceAddr(t *testing.T) {
	t.Parallel()
	require.Equal(t, "127.0.0.2", sourceAddr(0).String())
	require.Equal(t, "127.0.0.2", sourceAddr(clientsPerSource-1).String())
	require.Equal(t, "127.0.0.3", sourceAddr(clientsPerSource).String())
	require.Equal(t, "127.0.1.2", sourceAddr(256*clientsPerSource).String())
}
