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

// refusals are the settings of g this OS cannot honour, as key and
// problem, instead of accepting them and doing nothing.
func (p platform) refusals(g *General) [][2]string {
	var out [][2]string
	if g.TCPUserTimeout > 0 && !p.userTimeout {
		out = append(out, [2]string{"general.tcp_user_timeout", "not supported on " + p.goos + ": set it to 0"})
	}
	if g.TransactionLoop && p.goos != "linux" {
		out = append(out, [2]string{"general.transaction_loop", "the transaction core runs on Linux only: set it to false"})
	}
	return out
}
