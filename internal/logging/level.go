package logging

import (
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap/zapcore"
)

// LevelOff disables logging: no entry has a level above Fatal.
const LevelOff = zapcore.FatalLevel + 1

// Level is the outcome of ParseLevel.
type Level struct {
	Level   zapcore.Level
	Notices []string // what was accepted only in part, for a warning
}

// ParseLevel reads a log level in the seed's RUST_LOG-style syntax, shared
// by general.log_level, -l, reload and the admin SET log_level: a global
// level (error, warn, info, debug, trace, off, or default = initial) and
// module directives ("pg_doorman::pool::pool_coordinator=debug"), comma
// separated. zap has no per-module levels, so the global level is applied
// and directives are dropped with a notice; with directives only, the most
// verbose of their levels is applied, so the logs asked for are not lost.
// trace is logged as debug. An unknown level anywhere is an error; it does
// not repeat value, callers name what they parsed.
func ParseLevel(value string, initial zapcore.Level) (Level, error) {
	var out Level
	global := ""
	var directives []string
	mostVerbose := LevelOff
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		module, lvl, isDirective := strings.Cut(part, "=")
		switch {
		case part == "":
		case isDirective:
			l, err := levelOf(strings.TrimSpace(lvl), initial)
			if err != nil || strings.TrimSpace(module) == "" {
				return Level{}, fmt.Errorf("bad module directive %q: want module=level", part)
			}
			directives = append(directives, part)
			mostVerbose = min(mostVerbose, l)
		case global != "":
			return Level{}, errors.New("more than one global level")
		default:
			global = part
		}
	}
	switch {
	case global != "":
		l, err := levelOf(global, initial)
		if err != nil {
			return Level{}, err
		}
		out.Level = l
		if len(directives) > 0 {
			out.Notices = append(out.Notices, fmt.Sprintf("per-module filters %q are ignored, the global level %s applies to every module",
				strings.Join(directives, ","), LevelName(l)))
		}
	case len(directives) > 0:
		out.Level = mostVerbose
		out.Notices = append(out.Notices, fmt.Sprintf("per-module filters %q are applied as the global level %s (no per-module levels)",
			strings.Join(directives, ","), LevelName(mostVerbose)))
	default:
		return Level{}, errors.New("empty")
	}
	if hasTrace(global, directives) {
		out.Notices = append(out.Notices, "trace is logged as debug")
	}
	return out, nil
}

func levelOf(s string, initial zapcore.Level) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "default":
		return initial, nil
	case "off":
		return LevelOff, nil
	case "trace", "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "warn", "warning":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("unknown level %q: want error, warn, info, debug, trace, off or default", s)
}

func hasTrace(global string, directives []string) bool {
	if strings.EqualFold(global, "trace") {
		return true
	}
	for _, d := range directives {
		if _, l, _ := strings.Cut(d, "="); strings.EqualFold(strings.TrimSpace(l), "trace") {
			return true
		}
	}
	return false
}

// LevelName renders a level as SHOW LOG_LEVEL does.
func LevelName(l zapcore.Level) string {
	if l > zapcore.FatalLevel {
		return "off"
	}
	return l.String()
}
