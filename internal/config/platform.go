package config

import (
	"runtime"
	"time"

	"github.com/doorman-go/doorman/internal/sockopt"
)

// platform is what this build's OS can do for settings that depend on it.
type platform struct {
	goos        string
	userTimeout bool // a TCP user timeout option (sockopt)
}

var thisPlatform = platform{goos: runtime.GOOS, userTimeout: sockopt.UserTimeoutSupported}

// defaultTCPUserTimeout is general.tcp_user_timeout's default: 60 s where
// the OS has the option, 0 (the OS's own behaviour) where it has not.
func (p platform) defaultTCPUserTimeout() time.Duration {
	if p.userTimeout {
		return 60 * time.Second
	}
	return 0
}

// core reports whether the transaction core runs here (internal/session
// has it on Linux only); transaction_loop's default is on where it does.
func (p platform) core() bool { return p.goos == "linux" }

// refusal is a setting this OS cannot honour, and why.
type refusal struct{ key, problem string }

// refusals are the settings of g this OS cannot honour, refused instead
// of accepted and left without effect.
func (p platform) refusals(g *General) []refusal {
	var out []refusal
	if g.TCPUserTimeout > 0 && !p.userTimeout {
		out = append(out, refusal{"general.tcp_user_timeout", "not supported on " + p.goos + ": set it to 0"})
	}
	if g.TransactionLoop && !p.core() {
		out = append(out, refusal{"general.transaction_loop", "the transaction core runs on Linux only: set it to false"})
	}
	return out
}
