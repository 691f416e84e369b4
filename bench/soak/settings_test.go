package soak

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestApplyEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, s Settings)
		wantErr []string
	}{
		{"defaults", nil, func(t *testing.T, s Settings) {
			require.Equal(t, DefaultSettings(), s)
			require.Equal(t, 30*time.Minute, s.Duration)
			require.Equal(t, 400, s.Clients)
			require.Equal(t, 40, s.PoolSize)
			require.Equal(t, 5*time.Minute, s.WarmupTime())
			require.Equal(t, int64(4<<20), s.Slack)
		}, nil},
		{"validation run", map[string]string{"SOAK_DURATION": "3m", "SOAK_CLIENTS": "50", "SOAK_POOL_SIZE": "10",
			"SOAK_OUT": "/tmp/x.md", "SOAK_KILLS": "0", "SOAK_RSS_TOLERANCE": "0.1", "SOAK_RSS_SLACK": "2.5"}, func(t *testing.T, s Settings) {
			require.Equal(t, 3*time.Minute, s.Duration)
			require.Equal(t, 50, s.Clients)
			require.Equal(t, 10, s.PoolSize)
			require.Equal(t, "/tmp/x.md", s.Out)
			require.True(t, s.NoKills)
			require.InDelta(t, 0.1, s.Tolerance, 1e-12)
			require.Equal(t, int64(2.5*(1<<20)), s.Slack)
			require.Equal(t, time.Minute, s.WarmupTime())
		}, nil},
		{"explicit warm-up", map[string]string{"SOAK_DURATION": "10m", "SOAK_WARMUP": "90s"}, func(t *testing.T, s Settings) {
			require.Equal(t, 90*time.Second, s.WarmupTime())
		}, nil},
		{"short interval", map[string]string{"SOAK_DURATION": "1m", "SOAK_INTERVAL": "20s"}, func(t *testing.T, s Settings) {
			require.Equal(t, 20*time.Second, s.WarmupTime())
		}, nil},
		{"every bad value reported", map[string]string{"SOAK_DURATION": "30", "SOAK_CLIENTS": "-1", "SOAK_POOL_SIZE": "x",
			"SOAK_KILLS": "yes", "SOAK_RSS_TOLERANCE": "5", "SOAK_RSS_SLACK": "-1"}, nil,
			[]string{`SOAK_DURATION="30"`, `SOAK_CLIENTS="-1"`, `SOAK_POOL_SIZE="x"`, `SOAK_KILLS="yes"`, `SOAK_RSS_TOLERANCE="5"`, `SOAK_RSS_SLACK="-1"`}},
		{"warm-up longer than the run", map[string]string{"SOAK_DURATION": "2m", "SOAK_WARMUP": "2m"}, nil,
			[]string{"SOAK_WARMUP 2m0s leaves nothing"}},
		{"interval longer than the run", map[string]string{"SOAK_DURATION": "30s"}, nil,
			[]string{"SOAK_INTERVAL 1m0s is longer than SOAK_DURATION 30s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := DefaultSettings().ApplyEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					require.ErrorContains(t, err, w)
				}
				return
			}
			require.NoError(t, err)
			tc.check(t, s)
		})
	}
}
