package admin

import (
	"fmt"
	"strings"

	"go.uber.org/zap/zapcore"
)

// levelOff disables logging: no entry has a level above Fatal.
const levelOff = zapcore.FatalLevel + 1

// levelChange is the outcome of parsing a SET log_level value.
type levelChange struct {
	Level   zapcore.Level
	Keep    bool     // no global level given: leave it as it is
	Notices []string // what was accepted only in part
}

// parseLogLevel understands the seed's RUST_LOG-style filters: a global
// level ("debug") and module directives ("pg_doorman::pool=debug"), comma
// separated. Module directives are ignored with a notice (zap has no
// per-module levels); "trace" is logged as debug; "default" restores
// initial.
func parseLogLevel(value string, initial zapcore.Level) (levelChange, error) {
	var ch levelChange
	global := ""
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.Contains(part, "="):
			ch.Notices = append(ch.Notices, fmt.Sprintf("per-module log level %q is not supported and was ignored", part))
		case global != "":
			return levelChange{}, fmt.Errorf("invalid log_level %q: more than one global level", value)
		default:
			global = strings.ToLower(part)
		}
	}
	switch global {
	case "":
		if len(ch.Notices) == 0 {
			return levelChange{}, fmt.Errorf("invalid log_level %q: empty", value)
		}
		ch.Keep = true
	case "default":
		ch.Level = initial
	case "off":
		ch.Level = levelOff
	case "trace":
		ch.Level = zapcore.DebugLevel
		ch.Notices = append(ch.Notices, "trace is logged as debug")
	case "error", "warn", "warning", "info", "debug":
		if global == "warning" {
			global = "warn"
		}
		lvl, err := zapcore.ParseLevel(global)
		if err != nil {
			return levelChange{}, fmt.Errorf("invalid log_level %q: %w", value, err)
		}
		ch.Level = lvl
	default:
		return levelChange{}, fmt.Errorf("invalid log_level %q: want error, warn, info, debug, trace, off or default", value)
	}
	return ch, nil
}

// levelName is SHOW LOG_LEVEL's rendering of a zap level.
func levelName(l zapcore.Level) string {
	if l > zapcore.FatalLevel {
		return "off"
	}
	return l.String()
}
