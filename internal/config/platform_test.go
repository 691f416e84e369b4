package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPlatformRefusals(t *testing.T) {
	linux := platform{goos: "linux", userTimeout: true}
	darwin := platform{goos: "darwin", userTimeout: true}
	freebsd := platform{goos: "freebsd", userTimeout: false}
	for _, tt := range []struct {
		name string
		p    platform
		g    General
		want []string // keys refused
	}{
		{"linux takes both", linux, General{TCPUserTimeout: time.Minute, TransactionLoop: true}, nil},
		{"darwin takes the user timeout", darwin, General{TCPUserTimeout: time.Minute}, nil},
		{"darwin refuses the core", darwin, General{TransactionLoop: true}, []string{"general.transaction_loop"}},
		{"freebsd refuses a user timeout", freebsd, General{TCPUserTimeout: time.Second}, []string{"general.tcp_user_timeout"}},
		{"freebsd takes 0", freebsd, General{}, nil},
		{"freebsd refuses both", freebsd, General{TCPUserTimeout: time.Second, TransactionLoop: true},
			[]string{"general.tcp_user_timeout", "general.transaction_loop"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var keys []string
			for _, r := range tt.p.refusals(&tt.g) {
				keys = append(keys, r.key)
			}
			require.Equal(t, tt.want, keys)
		})
	}
}

// TestPlatformDefaults: the defaults of a platform pass its own refusals,
// so a config without these keys loads everywhere.
func TestPlatformDefaults(t *testing.T) {
	for _, p := range []platform{{goos: "linux", userTimeout: true}, {goos: "darwin", userTimeout: true}, {goos: "freebsd"}} {
		g := General{TCPUserTimeout: p.defaultTCPUserTimeout(), TransactionLoop: p.core()}
		require.Empty(t, p.refusals(&g), p.goos)
	}
	require.Equal(t, 60*time.Second, platform{userTimeout: true}.defaultTCPUserTimeout())
	require.Zero(t, platform{}.defaultTCPUserTimeout())
}

// TestThisPlatformLoadsDefaults: Default validates on this build's OS.
func TestThisPlatformLoadsDefaults(t *testing.T) {
	cfg := Default()
	_, err := cfg.Validate()
	require.NoError(t, err)
	require.Empty(t, thisPlatform.refusals(&cfg.General))
}
