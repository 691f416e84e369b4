package session

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/auth"
)

// mockIterations is PostgreSQL's default scram_iterations, what a real
// verifier created by PostgreSQL 15 carries.
const mockIterations = 4096

// mockSecret is the per-process random secret of mock SCRAM exchanges
// (PostgreSQL's mock_auth_nonce).
var mockSecret = sync.OnceValue(func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
})

// mockVerifier is a SCRAM verifier no password matches, for a user that
// has no usable one. Like PostgreSQL's scram_mock_salt, the salt is derived
// from the user name and the process secret, so repeated attempts for one
// name see the same salt, as they would for a real user.
func mockVerifier(secret []byte, user string) auth.SCRAMVerifier {
	mac := func(label string) []byte {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte(label))
		h.Write([]byte{0})
		h.Write([]byte(user))
		return h.Sum(nil)
	}
	return auth.SCRAMVerifier{
		Iterations: mockIterations,
		Salt:       mac("salt")[:16],
		StoredKey:  mac("stored-key"),
		ServerKey:  mac("server-key"),
	}
}

// loginLogsPerSecond bounds the WARN lines about failed logins per process:
// a password-guessing client must not flood the log. Lines over the bound
// are counted and the count is reported with the next line logged.
const loginLogsPerSecond = 10

// failedLogins limits the failed-login log lines of the process.
var failedLogins = logLimiter{perSecond: loginLogsPerSecond}

// logLimiter allows perSecond events per wall-clock second. Safe for
// concurrent use; the zero value with perSecond set is ready.
type logLimiter struct {
	perSecond int
	now       func() time.Time // nil = time.Now

	mu         sync.Mutex
	second     int64 // unix second of the current window
	n          int   // events allowed in it
	suppressed int   // events refused since the last allowed one
}

// allow reports whether an event may be logged now and, if so, how many
// were refused since the last one allowed.
func (l *logLimiter) allow() (ok bool, suppressed int) {
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	sec := now().Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	if sec != l.second {
		l.second, l.n = sec, 0
	}
	if l.n >= l.perSecond {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// logLoginFailure logs a refused login at WARN. It never carries a
// password or a verifier.
func logLoginFailure(log *zap.Logger, l *logLimiter, user, database string, addr net.Addr, reason string) {
	if log == nil {
		return
	}
	ok, suppressed := l.allow()
	if !ok {
		return
	}
	fields := []zap.Field{zap.String("user", user), zap.String("database", database),
		zap.String("addr", addrText(addr)), zap.String("reason", reason)}
	if suppressed > 0 {
		fields = append(fields, zap.Int("suppressed", suppressed))
	}
	log.Warn("login failed", fields...)
}

func addrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	if s := a.String(); s != "" {
		return s
	}
	return "[local]"
}
