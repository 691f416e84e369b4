package admin

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
)

func TestParseLogLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value   string
		want    zapcore.Level
		keep    bool
		notices int
		err     string
	}{
		{value: "debug", want: zapcore.DebugLevel},
		{value: "INFO", want: zapcore.InfoLevel},
		{value: " warn ", want: zapcore.WarnLevel},
		{value: "warning", want: zapcore.WarnLevel},
		{value: "error", want: zapcore.ErrorLevel},
		{value: "trace", want: zapcore.DebugLevel, notices: 1},
		{value: "off", want: levelOff},
		{value: "default", want: zapcore.ErrorLevel}, // the initial level below
		{value: "warn,pg_doorman::pool::pool_coordinator=debug", want: zapcore.WarnLevel, notices: 1},
		{value: "pg_doorman=debug", keep: true, notices: 1},
		{value: "", err: "empty"},
		{value: " , ", err: "empty"},
		{value: "loud", err: "want error, warn"},
		{value: "info,debug", err: "more than one global level"},
		{value: "fatal", err: "want error, warn"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			ch, err := parseLogLevel(tt.value, zapcore.ErrorLevel)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.keep, ch.Keep)
			if !tt.keep {
				require.Equal(t, tt.want, ch.Level)
			}
			require.Len(t, ch.Notices, tt.notices)
		})
	}
}

func TestLevelName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "debug", levelName(zapcore.DebugLevel))
	require.Equal(t, "warn", levelName(zapcore.WarnLevel))
	require.Equal(t, "off", levelName(levelOff))
}
