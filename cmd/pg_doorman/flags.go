package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// bindFlags registers the main command's flags on fl. Each defaults from
// its environment variable, as the seed's --help shows ([env: LOG_LEVEL=]
// and so on); a flag given on the command line wins. CONFIG_FILE is read
// by configPath.
func bindFlags(fl *pflag.FlagSet, f *flags, getenv func(string) string) {
	format := getenv("LOG_FORMAT")
	if format == "" {
		format = "text"
	}
	fl.BoolVarP(&f.test, "test-config", "t", false, "validate the config file and exit (0 valid, 1 invalid)")
	fl.StringVarP(&f.logLevel, "log-level", "l", getenv("LOG_LEVEL"), "log level: error, warn, info, debug, trace, off, or a filter like warn,pg_doorman::pool=debug (overrides general.log_level) [env: LOG_LEVEL=]")
	fl.StringVarP(&f.logFormat, "log-format", "F", format, "log format: text, structured, debug [env: LOG_FORMAT=]")
	fl.BoolVarP(&f.noColor, "no-color", "n", envBool(getenv("NO_COLOR")), "no colours in text logs [env: NO_COLOR=]")
	fl.BoolVarP(&f.daemonize, "daemon", "d", envBool(getenv("DAEMON")), "run in the background, PID in general.daemon_pid_file [env: DAEMON=]")
	fl.BoolVarP(&f.version, "version", "V", false, "print the version and exit")
}

// envBool reads a boolean variable: unset, empty and the false words of
// clap's FalseyValueParser (0, false, no, n, off, f, any case) are false,
// anything else is true (so NO_COLOR=1 and NO_COLOR=yes both work).
func envBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "n", "off", "f":
		return false
	}
	return true
}
