package logging

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
)

func TestParseLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value   string
		want    zapcore.Level
		notices int
		err     string
	}{
		{value: "debug", want: zapcore.DebugLevel},
		{value: "INFO", want: zapcore.InfoLevel},
		{value: " warn ", want: zapcore.WarnLevel},
		{value: "warning", want: zapcore.WarnLevel},
		{value: "error", want: zapcore.ErrorLevel},
		{value: "trace", want: zapcore.DebugLevel, notices: 1},
		{value: "off", want: LevelOff},
		{value: "default", want: zapcore.ErrorLevel}, // the initial level below
		{value: "warn,pg_doorman::pool::pool_coordinator=debug", want: zapcore.WarnLevel, notices: 1},
		{value: "pg_doorman=debug", want: zapcore.DebugLevel, notices: 1},
		{value: "pg_doorman::pool=info,pg_doorman::auth=debug", want: zapcore.DebugLevel, notices: 1},
		{value: "pg_doorman=trace", want: zapcore.DebugLevel, notices: 2},
		{value: "off,pg_doorman=warn", want: LevelOff, notices: 1},
		{value: "", err: "empty"},
		{value: " , ", err: "empty"},
		{value: "loud", err: `unknown level "loud"`},
		{value: "info,debug", err: "more than one global level"},
		{value: "fatal", err: "want error, warn, info, debug, trace, off or default"},
		{value: "info,pg_doorman=loud", err: `bad module directive "pg_doorman=loud"`},
		{value: "=debug", err: "bad module directive"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			got, err := ParseLevel(tt.value, zapcore.ErrorLevel)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Level)
			require.Len(t, got.Notices, tt.notices, "%q", got.Notices)
		})
	}
}

func TestLevelName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "debug", LevelName(zapcore.DebugLevel))
	require.Equal(t, "warn", LevelName(zapcore.WarnLevel))
	require.Equal(t, "off", LevelName(LevelOff))
}

// TestNewLevels: every form ParseLevel accepts builds a logger at that
// level; "off" logs nothing, not even errors.
func TestNewLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level   string
		enabled zapcore.Level // most verbose level that logs
		off     bool
	}{
		{level: "", enabled: zapcore.InfoLevel},
		{level: "trace", enabled: zapcore.DebugLevel},
		{level: "warn,pg_doorman::pool::pool_coordinator=debug", enabled: zapcore.WarnLevel},
		{level: "default", enabled: zapcore.InfoLevel},
		{level: "off", off: true},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			t.Parallel()
			log, atom, err := New(Options{Level: tt.level, Format: "structured"})
			require.NoError(t, err)
			if tt.off {
				require.False(t, log.Core().Enabled(zapcore.FatalLevel))
				require.Equal(t, "off", LevelName(atom.Level()))
				return
			}
			require.True(t, log.Core().Enabled(tt.enabled))
			require.False(t, log.Core().Enabled(tt.enabled-1))
		})
	}
	_, _, err := New(Options{Level: "loud"})
	require.ErrorContains(t, err, `unknown level "loud"`)
}
