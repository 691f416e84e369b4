package logging

import (
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options select the format, level and destination.
type Options struct {
	Level   string // see ParseLevel; "" = info
	Format  string // text, structured, debug (alias of text)
	NoColor bool
	// Syslog, when not empty, sends every line to the local syslog daemon
	// under this program name instead of stderr (general.syslog_prog_name).
	Syslog string
	// SyslogPaths are the sockets tried for it; nil means the usual ones
	// (/dev/log, /var/run/syslog, /var/run/log).
	SyslogPaths []string
}

// New returns a logger writing to stderr, or to syslog, and its atomic
// level. With Syslog set it fails when no syslog daemon listens, so that a
// process asked to log to syslog does not start logging nowhere.
func New(o Options) (*zap.Logger, zap.AtomicLevel, error) {
	lvl := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	if o.Level != "" {
		l, err := ParseLevel(o.Level, zapcore.InfoLevel)
		if err != nil {
			return nil, lvl, fmt.Errorf("log level %q: %w", o.Level, err)
		}
		lvl.SetLevel(l.Level)
	}
	toSyslog := o.Syslog != ""
	var enc zapcore.Encoder
	switch strings.ToLower(o.Format) {
	case "", "text", "debug":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		if o.NoColor || toSyslog || !isTerminal(os.Stderr) {
			ec.EncodeLevel = zapcore.CapitalLevelEncoder
		}
		if toSyslog {
			ec.TimeKey = "" // syslog stamps each line
		}
		enc = zapcore.NewConsoleEncoder(ec)
	case "structured", "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		if toSyslog {
			ec.TimeKey = ""
		}
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, lvl, fmt.Errorf("log format %q: want text, structured or debug", o.Format)
	}
	if toSyslog {
		paths := o.SyslogPaths
		if paths == nil {
			paths = defaultSyslogPaths()
		}
		sink, err := newSyslogSink(o.Syslog, os.Getpid(), paths, newSink(os.Stderr))
		if err != nil {
			return nil, lvl, fmt.Errorf("syslog_prog_name %q: %w", o.Syslog, err)
		}
		return zap.New(&syslogCore{LevelEnabler: lvl, enc: enc, sink: sink}), lvl, nil
	}
	core := zapcore.NewCore(enc, zapcore.Lock(newSink(os.Stderr)), lvl)
	return zap.New(core), lvl, nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
