package logging

import (
	"fmt"
	"os"
	"strings"
	"time"

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
	// SyslogCounts, when not nil, counts the lines syslog did not take
	// (each written to stderr instead).
	SyslogCounts *SyslogCounts
}

// New returns a logger writing to stderr, or to syslog, and its atomic
// level. With Syslog set it fails when no syslog daemon listens, so that a
// process asked to log to syslog does not start logging nowhere.
func New(o Options) (*zap.Logger, zap.AtomicLevel, error) {
	return build(o, os.Stderr)
}

// build is New writing to stderr, a file a test may replace.
func build(o Options, stderr *os.File) (*zap.Logger, zap.AtomicLevel, error) {
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
	structured := false
	switch strings.ToLower(o.Format) {
	case "", "text", "debug":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		if o.NoColor || toSyslog || !isTerminal(stderr) {
			ec.EncodeLevel = zapcore.CapitalLevelEncoder
		}
		if toSyslog {
			ec.TimeKey = "" // syslog stamps each line
		}
		enc = zapcore.NewConsoleEncoder(ec)
	case "structured", "json":
		enc = zapcore.NewJSONEncoder(structuredConfig(toSyslog))
		structured = true
	default:
		return nil, lvl, fmt.Errorf("log format %q: want text, structured or debug", o.Format)
	}
	if toSyslog {
		paths := o.SyslogPaths
		if paths == nil {
			paths = defaultSyslogPaths()
		}
		sink, err := newSyslogSink(o.Syslog, os.Getpid(), paths, newSink(stderr), o.SyslogCounts)
		if err != nil {
			return nil, lvl, fmt.Errorf("syslog_prog_name %q: %w", o.Syslog, err)
		}
		return newLogger(&syslogCore{LevelEnabler: lvl, enc: enc, sink: sink}, structured), lvl, nil
	}
	return newLogger(zapcore.NewCore(enc, zapcore.Lock(newSink(stderr)), lvl), structured), lvl, nil
}

// newLogger is the logger over core; a structured one records each line's
// caller as the seed's structured logs have it ("file" and "line").
func newLogger(core zapcore.Core, structured bool) *zap.Logger {
	if !structured {
		return zap.New(core)
	}
	return zap.New(callerFields{core}, zap.AddCaller())
}

// structuredConfig is the JSON shape of the seed's structured logs:
// {"timestamp":"2026-04-25T08:32:14.512Z","level":"INFO","message":...},
// the time in UTC with milliseconds (left out for syslog, which stamps its
// own), then the line's fields, then "file" and "line" (callerFields).
func structuredConfig(toSyslog bool) zapcore.EncoderConfig {
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey, ec.LevelKey, ec.MessageKey = "timestamp", "level", "message"
	ec.NameKey, ec.CallerKey, ec.FunctionKey = "", "", ""
	ec.EncodeTime = func(t time.Time, pe zapcore.PrimitiveArrayEncoder) {
		pe.AppendString(t.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	ec.EncodeLevel = zapcore.CapitalLevelEncoder
	if toSyslog {
		ec.TimeKey = ""
	}
	return ec
}

// callerFields adds an entry's caller to its fields as "file" (the last
// folder and the file, as zap trims it) and "line".
type callerFields struct{ zapcore.Core }

func (c callerFields) With(fields []zapcore.Field) zapcore.Core {
	return callerFields{c.Core.With(fields)}
}

func (c callerFields) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c callerFields) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if ent.Caller.Defined {
		file := ent.Caller.TrimmedPath()
		if i := strings.LastIndexByte(file, ':'); i > 0 {
			file = file[:i]
		}
		fields = append(fields[:len(fields):len(fields)], zap.String("file", file), zap.Int("line", ent.Caller.Line))
	}
	return c.Core.Write(ent, fields)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
