package logging

import (
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options select the format and level.
type Options struct {
	Level   string // see ParseLevel; "" = info
	Format  string // text, structured, debug (alias of text)
	NoColor bool
}

// New returns a logger writing to stderr and its atomic level.
func New(o Options) (*zap.Logger, zap.AtomicLevel, error) {
	lvl := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	if o.Level != "" {
		l, err := ParseLevel(o.Level, zapcore.InfoLevel)
		if err != nil {
			return nil, lvl, fmt.Errorf("log level %q: %w", o.Level, err)
		}
		lvl.SetLevel(l.Level)
	}
	var enc zapcore.Encoder
	switch strings.ToLower(o.Format) {
	case "", "text", "debug":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		if o.NoColor || !isTerminal(os.Stderr) {
			ec.EncodeLevel = zapcore.CapitalLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(ec)
	case "structured", "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, lvl, fmt.Errorf("log format %q: want text, structured or debug", o.Format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(newSink(os.Stderr)), lvl)
	return zap.New(core), lvl, nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
