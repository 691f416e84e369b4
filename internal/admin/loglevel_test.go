package admin

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/doorman-go/doorman/internal/logging"
)

// TestSetLogLevelRefusedKeepsLevel: a bad SET log_level is an error to the
// client and a WARN in the log, and the level stays.
func TestSetLogLevelRefusedKeepsLevel(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	core, logs := observer.New(zapcore.DebugLevel)
	c.log = zap.New(core)
	require.Equal(t, "SET", query1(t, c, "SET log_level = 'warn'").Tag)

	for _, v := range []string{"loud", "info,debug", "info,pg_doorman=loud", ""} {
		r := query1(t, c, "SET log_level = '"+v+"'")
		require.NotNil(t, r.Err, "%q must fail", v)
		require.Equal(t, "22023", r.Err.Code)
		require.Contains(t, r.Err.Message, "invalid log_level")
		require.Equal(t, zapcore.WarnLevel, c.d.Level.Level(), "level kept after %q", v)
	}
	warns := logs.FilterMessage("SET log_level refused, keeping the current level").All()
	require.Len(t, warns, 4)
	for _, e := range warns {
		require.Equal(t, zapcore.WarnLevel, e.Level)
		require.Equal(t, "warn", e.ContextMap()["log_level"])
	}
}

// TestSetLogLevelForms: what general.log_level accepts, SET accepts too,
// with the same level.
func TestSetLogLevelForms(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	tests := []struct {
		value   string
		want    zapcore.Level
		notices int
	}{
		{value: "trace", want: zapcore.DebugLevel, notices: 1},
		{value: "off", want: logging.LevelOff},
		{value: "pg_doorman::pool=debug", want: zapcore.DebugLevel, notices: 1},
		{value: "warn,pg_doorman::pool::pool_coordinator=debug", want: zapcore.WarnLevel, notices: 1},
		{value: "default", want: zapcore.InfoLevel}, // the console's initial level
	}
	for _, tt := range tests {
		r := query1(t, c, "SET log_level = '"+tt.value+"'")
		require.Nil(t, r.Err, "%q", tt.value)
		require.Equal(t, "SET", r.Tag)
		require.Len(t, r.Notices, tt.notices, "%q", tt.value)
		require.Equal(t, tt.want, c.d.Level.Level(), "%q", tt.value)
		require.Equal(t, logging.LevelName(tt.want), *query1(t, c, "SHOW LOG_LEVEL").Rows[0][0])
	}
}
