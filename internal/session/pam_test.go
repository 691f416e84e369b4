//go:build linux && cgo && pam

package session_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// pamService writes a throwaway /etc/pam.d service (the tests run as root)
// and removes it when the test ends.
func pamService(t *testing.T, lines ...string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "doorman-session-test-" + hex.EncodeToString(b[:])
	path := filepath.Join("/etc/pam.d", name)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644),
		"the PAM tests run as root: they write service files into /etc/pam.d")
	t.Cleanup(func() { _ = os.Remove(path) })
	return name
}

// TestPAMLogin: users with auth_pam_service log in with the password PAM
// accepts (a pam_exec script that checks it), the backend login uses
// server_username/server_password, and a PAM stack that takes seconds
// does not hold up other clients' logins.
func TestPAMLogin(t *testing.T) {
	setupUsers(t)
	script := filepath.Join(t.TempDir(), "check-password")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\npw=$(tr -d '\\000')\n[ \"$pw\" = 'pam-secret' ]\n"), 0o755))
	check := pamService(t,
		"auth [success=1 default=ignore] pam_exec.so quiet expose_authtok "+script,
		"auth requisite pam_deny.so", "auth required pam_permit.so", "account required pam_permit.so")
	slow := pamService(t, "auth required pam_exec.so quiet /bin/sleep 3", "auth required pam_permit.so", "account required pam_permit.so")
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
pools:
  appdb:
    server_host: 127.0.0.1
    server_port: %d
    users:
      - {username: app, password: '%s', pool_size: 2}
      - {username: pam_alice, auth_pam_service: %s, server_username: plain, server_password: plain-secret, pool_size: 2}
      - {username: pam_slow, auth_pam_service: %s, server_username: plain, server_password: plain-secret, pool_size: 2}
`, pg.Port, scramVer, check, slow))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := psqlWho(t, d, "pam_alice", "appdb", "pam-secret")
	require.NoError(t, err)
	require.Equal(t, "plain", strings.Fields(out)[0], "the backend login is server_username")
	_, err = pgx.Connect(ctx, d.DSN("pam_alice", "wrong", "appdb"))
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "28P01", pe.Code)

	slowDone := make(chan error, 1)
	slowStart := time.Now()
	go func() {
		c, err := pgx.Connect(ctx, d.DSN("pam_slow", "whatever", "appdb"))
		if err == nil {
			c.Close(ctx)
		}
		slowDone <- err
	}()
	// While PAM sleeps for pam_slow, other clients log in.
	for range 5 {
		c, err := pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
		require.NoError(t, err)
		c.Close(ctx)
		out, err := psqlWho(t, d, "pam_alice", "appdb", "pam-secret")
		require.NoError(t, err, out)
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the slow PAM login ended (%v) before the others: the test shows nothing", err)
	default:
	}
	require.NoError(t, <-slowDone)
	require.GreaterOrEqual(t, time.Since(slowStart), 3*time.Second, "the slow stack really ran")
}
