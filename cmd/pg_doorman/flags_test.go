package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// TestFlagsFromEnvironment: LOG_LEVEL, LOG_FORMAT, NO_COLOR and DAEMON
// give the flags their defaults; the command line wins.
func TestFlagsFromEnvironment(t *testing.T) {
	base := flags{logFormat: "text"}
	with := func(mod func(*flags)) flags { f := base; mod(&f); return f }
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want flags
	}{
		{"nothing set", nil, nil, base},
		{"LOG_LEVEL", map[string]string{"LOG_LEVEL": "debug"}, nil, with(func(f *flags) { f.logLevel = "debug" })},
		{"-l wins over LOG_LEVEL", map[string]string{"LOG_LEVEL": "debug"}, []string{"-l", "warn"}, with(func(f *flags) { f.logLevel = "warn" })},
		{"LOG_FORMAT", map[string]string{"LOG_FORMAT": "Structured"}, nil, with(func(f *flags) { f.logFormat = "Structured" })},
		{"empty LOG_FORMAT is text", map[string]string{"LOG_FORMAT": ""}, nil, base},
		{"--log-format wins over LOG_FORMAT", map[string]string{"LOG_FORMAT": "structured"}, []string{"--log-format", "debug"}, with(func(f *flags) { f.logFormat = "debug" })},
		{"NO_COLOR=1", map[string]string{"NO_COLOR": "1"}, nil, with(func(f *flags) { f.noColor = true })},
		{"NO_COLOR=yes", map[string]string{"NO_COLOR": "yes"}, nil, with(func(f *flags) { f.noColor = true })},
		{"NO_COLOR=0", map[string]string{"NO_COLOR": "0"}, nil, base},
		{"NO_COLOR=False", map[string]string{"NO_COLOR": "False"}, nil, base},
		{"NO_COLOR empty", map[string]string{"NO_COLOR": ""}, nil, base},
		{"--no-color=false wins over NO_COLOR", map[string]string{"NO_COLOR": "1"}, []string{"--no-color=false"}, base},
		{"-n without NO_COLOR", nil, []string{"-n"}, with(func(f *flags) { f.noColor = true })},
		{"DAEMON=true", map[string]string{"DAEMON": "true"}, nil, with(func(f *flags) { f.daemonize = true })},
		{"DAEMON=off", map[string]string{"DAEMON": "off"}, nil, base},
		{"-d=false wins over DAEMON", map[string]string{"DAEMON": "1"}, []string{"-d=false"}, base},
		{"all at once", map[string]string{"LOG_LEVEL": "trace", "LOG_FORMAT": "debug", "NO_COLOR": "1", "DAEMON": "1"}, []string{"-t"},
			flags{test: true, logLevel: "trace", logFormat: "debug", noColor: true, daemonize: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flags
			fs := pflag.NewFlagSet("pg_doorman", pflag.ContinueOnError)
			bindFlags(fs, &f, func(k string) string { return tt.env[k] })
			require.NoError(t, fs.Parse(tt.args))
			require.Equal(t, tt.want, f)
		})
	}
}

// TestLogFormatFromEnvironment: a bad LOG_FORMAT fails the start like a
// bad -F does.
func TestLogFormatFromEnvironment(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte("general:\n  port: 6432\npools: {}\n"), 0o600))
	t.Setenv("LOG_FORMAT", "xml")
	require.Equal(t, 1, run([]string{good}))
}

func TestSigintUpgrades(t *testing.T) {
	t.Setenv("PG_DOORMAN_CI_SHUTDOWN_ONLY", "1")
	require.False(t, sigintUpgrades(true), "shutdown-only mode wins over -d")
	require.False(t, sigintUpgrades(false))
	t.Setenv("PG_DOORMAN_CI_SHUTDOWN_ONLY", "")
	require.True(t, sigintUpgrades(true), "under -d SIGINT is the legacy upgrade")
}
