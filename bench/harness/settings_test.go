package harness

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
		{name: "defaults", env: nil, check: func(t *testing.T, s Settings) {
			require.Equal(t, DefaultSettings(), s)
		}},
		{name: "overrides", env: map[string]string{"BENCH_TIME": "3", "BENCH_CLIENTS": "5, 50", "BENCH_ROUNDS": "3", "BENCH_KEEP": "1",
			"BENCH_PAUSED": "20:100, 50:60"},
			check: func(t *testing.T, s Settings) {
				require.Equal(t, 3*time.Second, s.Duration)
				require.Equal(t, []int{5, 50}, s.Clients)
				require.Equal(t, 3, s.Rounds)
				require.True(t, s.Keep)
				require.Equal(t, []PausedLoad{{Clients: 20, Rate: 100}, {Clients: 50, Rate: 60}}, s.Paused)
				require.Equal(t, 100, s.MaxClients())
			}},
		{name: "paused only", env: map[string]string{"BENCH_ONLY": "paused", "BENCH_PAUSED": "600:100"},
			check: func(t *testing.T, s Settings) {
				require.Equal(t, OnlyPaused, s.Only)
				require.Equal(t, 600, s.MaxClients(), "the paused section's 600 clients")
			}},
		{name: "paused default", env: nil, check: func(t *testing.T, s Settings) {
			require.Equal(t, []PausedLoad{{Clients: 200, Rate: 1300}, {Clients: 400, Rate: 500}}, s.Paused)
		}},
		{name: "bad paused loads", env: map[string]string{"BENCH_PAUSED": "200"},
			wantErr: []string{`BENCH_PAUSED="200": "200": want clients:rate`}},
		{name: "bad paused rate", env: map[string]string{"BENCH_PAUSED": "200:1300,400:0"},
			wantErr: []string{`BENCH_PAUSED="200:1300,400:0": "400:0": "0": want a positive integer`}},
		{name: "tls only", env: map[string]string{"BENCH_ONLY": "tls", "BENCH_TLS_CLIENTS": "20,200", "BENCH_TLS_CONNECT_CLIENTS": "4"},
			check: func(t *testing.T, s Settings) {
				require.Equal(t, OnlyTLS, s.Only)
				require.Equal(t, []int{20, 200}, s.TLSClients)
				require.Equal(t, 4, s.TLSConnectClients)
				require.Equal(t, 400, s.MaxClients(), "the matrix's 400 clients")
				s.Clients, s.Paused = nil, nil
				require.Equal(t, 200, s.MaxClients(), "the TLS section's 200 clients")
			}},
		{name: "idle only", env: map[string]string{"BENCH_ONLY": "idle"},
			check: func(t *testing.T, s Settings) { require.Equal(t, OnlyIdle, s.Only) }},
		{name: "floor only", env: map[string]string{"BENCH_ONLY": "floor"},
			check: func(t *testing.T, s Settings) { require.Equal(t, OnlyFloor, s.Only) }},
		{name: "idle counts", env: map[string]string{"BENCH_IDLE_CLIENTS": "200, max", "BENCH_IDLE_MAX": "500", "BENCH_PROFILE_TXS": "100"},
			check: func(t *testing.T, s Settings) {
				require.Equal(t, []int{200, IdleMax}, s.IdleCounts)
				require.Equal(t, 500, s.IdleMaxCap)
				require.Equal(t, 100, s.ProfileTxs)
			}},
		{name: "idle counts default", env: nil, check: func(t *testing.T, s Settings) {
			require.Equal(t, []int{2000, IdleMax}, s.IdleCounts)
			require.Zero(t, s.IdleMaxCap)
		}},
		{name: "bad idle counts", env: map[string]string{"BENCH_IDLE_CLIENTS": "2000,lots", "BENCH_IDLE_MAX": "-5"},
			wantErr: []string{`BENCH_IDLE_CLIENTS="2000,lots": "lots": want a positive integer or max`, `BENCH_IDLE_MAX="-5"`}},
		{name: "every bad variable reported", env: map[string]string{"BENCH_TIME": "0", "BENCH_SCALE": "big", "BENCH_CLIENTS": "10,x",
			"BENCH_TLS_CLIENTS": "-1", "BENCH_ONLY": "proxy"},
			wantErr: []string{`BENCH_TIME="0"`, `BENCH_SCALE="big"`, `BENCH_CLIENTS="10,x"`, `BENCH_TLS_CLIENTS="-1"`, `BENCH_ONLY="proxy"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := DefaultSettings().ApplyEnv(func(k string) string { return tt.env[k] })
			for _, w := range tt.wantErr {
				require.ErrorContains(t, err, w)
			}
			if tt.wantErr != nil {
				return
			}
			require.NoError(t, err)
			tt.check(t, s)
		})
	}
}

func TestDoormanEnv(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=/bin", "PG_DOORMAN_GENERAL_TRANSACTION_LOOP=true", "PG_DOORMAN_PROMETHEUS_PORT=1", "PG_DOORMAN_GENERAL_LOG_LEVEL=warn"}
	got := doormanEnv(env)
	require.Equal(t, []string{"PG_DOORMAN_GENERAL_LOG_LEVEL=warn", "PG_DOORMAN_GENERAL_TRANSACTION_LOOP=true"}, got)
	require.Equal(t, ", except what the environment set for every pg_doorman of the run: `PG_DOORMAN_GENERAL_LOG_LEVEL=warn`, `PG_DOORMAN_GENERAL_TRANSACTION_LOOP=true`", doormanEnvText(got))
	require.Empty(t, doormanEnvText(nil))
}
