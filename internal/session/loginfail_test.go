package session

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/doorman-go/doorman/internal/auth"
)

func TestLogLimiter(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := logLimiter{perSecond: 3, now: func() time.Time { return now }}
	type step struct {
		advance        time.Duration
		ok             bool
		wantSuppressed int
	}
	steps := []step{
		{0, true, 0}, {0, true, 0}, {0, true, 0},
		{0, false, 0}, {0, false, 0}, // over the bound in this second
		{time.Second, true, 2}, // next second: reports the 2 dropped
		{0, true, 0}, {0, true, 0}, {0, false, 0},
		{5 * time.Second, true, 1},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		ok, suppressed := l.allow()
		require.Equal(t, s.ok, ok, "step %d", i)
		require.Equal(t, s.wantSuppressed, suppressed, "step %d", i)
	}
}

func TestLogLoginFailure(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	now := time.Unix(1000, 0)
	l := logLimiter{perSecond: 2, now: func() time.Time { return now }}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 4444}
	for range 5 {
		logLoginFailure(log, &l, "app", "appdb", addr, "password")
	}
	now = now.Add(time.Second)
	logLoginFailure(log, &l, "ghost", "nodb", &net.UnixAddr{Net: "unix"}, "no_user")

	entries := logs.All()
	require.Len(t, entries, 3, "2 lines in the first second, then one carrying the count")
	for _, e := range entries {
		require.Equal(t, zapcore.WarnLevel, e.Level)
		require.Equal(t, "login failed", e.Message)
	}
	require.Equal(t, map[string]any{"user": "app", "database": "appdb", "addr": "127.0.0.9:4444", "reason": "password"},
		entries[0].ContextMap())
	require.Equal(t, map[string]any{"user": "ghost", "database": "nodb", "addr": "[local]", "reason": "no_user",
		"suppressed": int64(3)}, entries[2].ContextMap())
}

func TestMockVerifier(t *testing.T) {
	t.Parallel()
	secret := []byte("process secret")
	a := mockVerifier(secret, "ghost")
	require.Equal(t, a, mockVerifier(secret, "ghost"), "stable for one name")
	require.Equal(t, 4096, a.Iterations)
	require.Len(t, a.Salt, 16)
	require.NotEqual(t, a.Salt, mockVerifier(secret, "ghost2").Salt)
	require.NotEqual(t, a.Salt, mockVerifier([]byte("other process"), "ghost").Salt)

	// No password gets through, and the failure is the wrong-password one.
	for _, password := range []string{"", "ghost", "process secret"} {
		srv := auth.NewSCRAMServer(a, nil)
		cl := auth.NewSCRAMClientPassword(password, nil)
		first, err := srv.ClientFirst(cl.ClientFirst())
		require.NoError(t, err)
		final, err := cl.ServerFirst(first)
		require.NoError(t, err)
		_, err = srv.ClientFinal(final)
		require.True(t, errors.Is(err, auth.ErrAuthFailed), "password %q: %v", password, err)
	}
}
