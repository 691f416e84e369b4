//go:build linux && cgo && pam

package pam

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	libpam "github.com/msteinert/pam/v2"
	"github.com/stretchr/testify/require"
)

// randomName returns prefix plus 8 random hex digits.
func randomName(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return prefix + hex.EncodeToString(b)
}

// writeService creates a throwaway /etc/pam.d/doorman-test-<random> with the
// given lines and removes it when the test ends. It returns the service name.
func writeService(t *testing.T, lines ...string) string {
	t.Helper()
	name := randomName(t, "doorman-test-")
	path := filepath.Join("/etc/pam.d", name)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644),
		"the PAM tests run as root: they write service files into /etc/pam.d")
	t.Cleanup(func() { require.NoError(t, os.Remove(path)) })
	return name
}

// passwordScript writes a script for pam_exec expose_authtok that accepts
// exactly password (pam_exec writes the token NUL-terminated on stdin).
func passwordScript(t *testing.T, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "check-password")
	script := fmt.Sprintf("#!/bin/sh\npw=$(tr -d '\\000')\n[ \"$pw\" = '%s' ]\n", password)
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

// addUser creates a throwaway OS user with password and deletes it when the
// test ends.
func addUser(t *testing.T, password string) string {
	t.Helper()
	for _, tool := range []string{"useradd", "chpasswd", "userdel"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is missing: apt-get install passwd", tool)
	}
	name := randomName(t, "doorman-test-")
	out, err := exec.Command("useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name).CombinedOutput()
	require.NoError(t, err, "useradd: %s", out)
	t.Cleanup(func() {
		out, err := exec.Command("userdel", name).CombinedOutput()
		require.NoError(t, err, "userdel: %s", out)
	})
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(name + ":" + password + "\n")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "chpasswd: %s", out)
	return name
}

const (
	permitAuth    = "auth required pam_permit.so"
	permitAccount = "account required pam_permit.so"
)

func TestAvailable(t *testing.T) {
	t.Parallel()
	require.True(t, Available())
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	const right = "right horse battery"
	script := passwordScript(t, right)
	permit := writeService(t, permitAuth, permitAccount)
	deny := writeService(t, "auth required pam_deny.so", permitAccount)
	denyAccount := writeService(t, permitAuth, "account required pam_deny.so")
	// pam_exec turns a failing script into PAM_SYSTEM_ERR; the jump over
	// pam_deny (as in Debian's common-auth) makes it a refusal.
	execCheck := writeService(t,
		"auth [success=1 default=ignore] pam_exec.so quiet expose_authtok "+script,
		"auth requisite pam_deny.so", permitAuth, permitAccount)
	brokenModule := writeService(t, "auth required pam_doorman_no_such_module.so", permitAccount)
	unix := writeService(t, "auth required pam_unix.so nodelay", "account required pam_unix.so")
	osUser := addUser(t, right)

	tests := []struct {
		name, service, user, password string
		authFailed                    bool // error wraps ErrAuthFailed
		system                        bool // error is not an auth failure
	}{
		{name: "permit", service: permit, user: "alice", password: "anything"},
		{name: "deny", service: deny, user: "alice", password: "anything", authFailed: true},
		{name: "account denied", service: denyAccount, user: "alice", password: "anything", authFailed: true},
		{name: "exec right password", service: execCheck, user: "alice", password: right},
		{name: "exec wrong password", service: execCheck, user: "alice", password: "wrong horse", authFailed: true},
		{name: "unix right password", service: unix, user: osUser, password: right},
		{name: "unix wrong password", service: unix, user: osUser, password: "wrong horse", authFailed: true},
		{name: "unix unknown user", service: unix, user: osUser + "x", password: right, authFailed: true},
		{name: "module missing", service: brokenModule, user: "alice", password: "anything", system: true},
		{name: "empty service", service: "", user: "alice", password: "anything", system: true},
		{name: "password too long", service: permit, user: "alice", password: strings.Repeat("p", MaxPasswordLen+1), system: true},
		{name: "NUL in password", service: permit, user: "alice", password: "any\x00thing", system: true},
		{name: "NUL in user", service: permit, user: "al\x00ice", password: "anything", system: true},
		{name: "empty password", service: permit, user: "alice", password: "", authFailed: true},
	}
	a := New(4)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := a.Authenticate(context.Background(), tt.service, tt.user, tt.password)
			switch {
			case tt.authFailed:
				require.ErrorIs(t, err, ErrAuthFailed)
			case tt.system:
				require.Error(t, err)
				require.NotErrorIs(t, err, ErrAuthFailed)
			default:
				require.NoError(t, err)
				return
			}
			if tt.password != "" {
				require.NotContains(t, err.Error(), tt.password)
			}
		})
	}
}

// A service without a file in /etc/pam.d is not refused by pam_start:
// Linux-PAM runs /etc/pam.d/other instead, which on Debian 12 includes
// common-auth and common-account (pam_unix). So an unknown user is refused,
// but a real OS user with the right password gets in: the operator must
// create the service file.
func TestMissingServiceFallsBackToOther(t *testing.T) {
	t.Parallel()
	const right = "right horse battery"
	osUser := addUser(t, right)
	missing := randomName(t, "doorman-test-missing-")
	_, err := os.Stat(filepath.Join("/etc/pam.d", missing))
	require.ErrorIs(t, err, os.ErrNotExist)
	other, err := os.ReadFile("/etc/pam.d/other")
	require.NoError(t, err)
	require.Contains(t, string(other), "@include common-auth", "this test documents Debian's /etc/pam.d/other")

	a := New(2)
	ctx := context.Background()
	err = a.Authenticate(ctx, missing, osUser+"x", right)
	require.ErrorIs(t, err, ErrAuthFailed)
	require.ErrorContains(t, err, missing)
	require.NoError(t, a.Authenticate(ctx, missing, osUser, right))
}

func TestSlowStackDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	slow := writeService(t, "auth required pam_exec.so quiet /bin/sleep 2", permitAccount)
	permit := writeService(t, permitAuth, permitAccount)
	a := New(4)

	slowDone := make(chan error, 1)
	go func() { slowDone <- a.Authenticate(context.Background(), slow, "alice", "secret") }()
	require.Eventually(t, func() bool { return a.InFlight() == 1 }, 5*time.Second, time.Millisecond)

	require.NoError(t, a.Authenticate(context.Background(), permit, "bob", "secret"))
	select {
	case err := <-slowDone:
		t.Fatalf("the slow call ended (%v) before the permit call: the test shows nothing", err)
	default:
	}
	require.Equal(t, 1, a.InFlight())

	// A caller that gives up returns at once; its transaction keeps a slot.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := a.Authenticate(ctx, slow, "carol", "secret")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, 2, a.InFlight())

	require.NoError(t, <-slowDone)
	require.Eventually(t, func() bool { return a.InFlight() == 0 }, 5*time.Second, 5*time.Millisecond)
}

func TestBoundWaitsForSlot(t *testing.T) {
	t.Parallel()
	slow := writeService(t, "auth required pam_exec.so quiet /bin/sleep 2", permitAccount)
	permit := writeService(t, permitAuth, permitAccount)
	a := New(1)

	slowDone := make(chan error, 1)
	go func() { slowDone <- a.Authenticate(context.Background(), slow, "alice", "secret") }()
	require.Eventually(t, func() bool { return a.InFlight() == 1 }, 5*time.Second, time.Millisecond)

	// The only slot is taken: the caller waits and gives up, PAM is not called.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, a.Authenticate(ctx, permit, "bob", "secret"), context.DeadlineExceeded)
	require.Equal(t, 1, a.InFlight())

	// A caller without a deadline gets the slot once the slow call ends.
	require.NoError(t, a.Authenticate(context.Background(), permit, "bob", "secret"))
	require.NoError(t, <-slowDone)
	require.Zero(t, a.InFlight())
}

func TestConverse(t *testing.T) {
	t.Parallel()
	conv := converse("alice", "secret")
	tests := []struct {
		name  string
		style libpam.Style
		want  string
		fails bool
	}{
		{name: "password prompt", style: libpam.PromptEchoOff, want: "secret"},
		{name: "user prompt", style: libpam.PromptEchoOn, want: "alice"},
		{name: "error message", style: libpam.ErrorMsg},
		{name: "text info", style: libpam.TextInfo},
		{name: "binary prompt", style: libpam.BinaryPrompt, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := conv(tt.style, "Prompt: ")
			if tt.fails {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{libpam.ErrAuth, true},
		{libpam.ErrUserUnknown, true},
		{libpam.ErrPermDenied, true},
		{libpam.ErrMaxtries, true},
		{libpam.ErrAcctExpired, true},
		{libpam.ErrNewAuthtokReqd, true},
		{libpam.ErrAuthtokExpired, true},
		{libpam.ErrCredExpired, true},
		{fmt.Errorf("wrapped: %w", libpam.ErrAuth), true},
		{libpam.ErrAuthinfoUnavail, false},
		{libpam.ErrCredInsufficient, false},
		{libpam.ErrSystem, false},
		{libpam.ErrService, false},
		{libpam.ErrConv, false},
		{libpam.ErrOpen, false},
		{libpam.ErrModuleUnknown, false},
		{errors.New("not a PAM status"), false},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, refused(tt.err))
		})
	}
}

// BenchmarkPermit measures one whole transaction through the Authenticator
// on the cheapest stack (pam_permit): the overhead PAM and the hand-off add
// to a login.
func BenchmarkPermit(b *testing.B) {
	name := "doorman-test-bench"
	path := filepath.Join("/etc/pam.d", name)
	require.NoError(b, os.WriteFile(path, []byte(permitAuth+"\n"+permitAccount+"\n"), 0o644))
	b.Cleanup(func() { require.NoError(b, os.Remove(path)) })
	a := New(4)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Authenticate(ctx, name, "alice", "secret"); err != nil {
			b.Fatal(err)
		}
	}
}
