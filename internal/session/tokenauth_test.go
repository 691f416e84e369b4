package session_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// tokenKeys: two RSA keys made once per test binary (slow to generate).
var tokenKeys struct {
	once       sync.Once
	good, evil *rsa.PrivateKey
}

func rsaKeys(t *testing.T) (good, evil *rsa.PrivateKey) {
	tokenKeys.once.Do(func() {
		var err error
		tokenKeys.good, err = rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		tokenKeys.evil, err = rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
	})
	return tokenKeys.good, tokenKeys.evil
}

func writePublicKey(t *testing.T, path string, k *rsa.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
}

func mint(t *testing.T, k *rsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(k)
	require.NoError(t, err)
	return s
}

var talosRoles sync.Once

// tokenStart runs pg_doorman with a JWT user and the three Talos users,
// each logging in to PostgreSQL as a role of its own.
func tokenStart(t *testing.T) *apptest.Instance {
	t.Helper()
	setupUsers(t)
	talosRoles.Do(func() {
		for _, r := range []string{"tk_owner", "tk_rw", "tk_ro", "tk_billing"} {
			pg.CreateUser(t, r, r+"-secret", "scram-sha-256")
		}
	})
	good, _ := rsaKeys(t)
	dir := t.TempDir()
	writePublicKey(t, filepath.Join(dir, "kid-a.pem"), good)
	writePublicKey(t, filepath.Join(dir, "jwt.pem"), good)
	user := func(name, server string) string {
		return fmt.Sprintf("      - {username: %s, server_username: %s, server_password: %s-secret, pool_size: 2}\n", name, server, server)
	}
	return apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  talos:
    keys: ["%s"]
    databases: [appdb]
pools:
  appdb:
    server_host: 127.0.0.1
    server_port: %d
    users:
      - {username: billing-service, password: "jwt-pkey-fpath:%s", server_username: tk_billing, server_password: tk_billing-secret, pool_size: 2}
%s%s%s`, filepath.Join(dir, "kid-a.pem"), pg.Port, filepath.Join(dir, "jwt.pem"),
		user("owner", "tk_owner"), user("read_write", "tk_rw"), user("read_only", "tk_ro")))
}

// psqlWho logs in with psql, the token as the password, and returns
// current_user and application_name, or psql's error output.
func psqlWho(t *testing.T, d *apptest.Instance, user, db, password string) (string, error) {
	t.Helper()
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql is needed: apt-get install postgresql-client")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, psql, "-X", "-A", "-t", "-w",
		fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable", d.Port, user, db),
		"-c", "SELECT current_user || ' ' || current_setting('application_name')")
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", errors.New(strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func TestJWTLogin(t *testing.T) {
	d := tokenStart(t)
	good, evil := rsaKeys(t)
	now := time.Now()
	claims := func(user string, exp, nbf time.Time) jwt.MapClaims {
		c := jwt.MapClaims{"preferred_username": user, "iat": now.Unix(), "exp": exp.Unix()}
		if !nbf.IsZero() {
			c["nbf"] = nbf.Unix()
		}
		return c
	}
	tests := []struct {
		name, token string
		want        string // current_user, or the error text
		ok          bool
	}{
		{"good", mint(t, good, "", claims("billing-service", now.Add(5*time.Minute), time.Time{})), "tk_billing", true},
		{"expired", mint(t, good, "", claims("billing-service", now.Add(-time.Minute), time.Time{})), "token expired", false},
		{"not valid yet", mint(t, good, "", claims("billing-service", now.Add(time.Hour), now.Add(30*time.Minute))), "not valid yet", false},
		{"wrong key", mint(t, evil, "", claims("billing-service", now.Add(5*time.Minute), time.Time{})), "signature", false},
		{"other user's token", mint(t, good, "", claims("someone-else", now.Add(5*time.Minute), time.Time{})), "user", false},
		{"not a token", "password", "malformed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := psqlWho(t, d, "billing-service", "appdb", tt.token)
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, tt.want, strings.Fields(out)[0])
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), tt.token, "the token is never echoed")
		})
	}
	t.Run("pgx gets 28P01", func(t *testing.T) {
		tok := mint(t, evil, "", claims("billing-service", now.Add(5*time.Minute), time.Time{}))
		_, err := pgx.Connect(context.Background(), d.DSN("billing-service", tok, "appdb"))
		var pe *pgconn.PgError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "28P01", pe.Code)
	})
}

func TestTalosLogin(t *testing.T) {
	d := tokenStart(t)
	good, evil := rsaKeys(t)
	exp := time.Now().Add(5 * time.Minute).Unix()
	access := func(entries map[string][]string) jwt.MapClaims {
		ra := map[string]any{}
		for k, roles := range entries {
			list := make([]any, len(roles))
			for i, r := range roles {
				list[i] = r
			}
			ra[k] = map[string]any{"roles": list}
		}
		return jwt.MapClaims{"exp": exp, "clientId": "billing-app", "resource_access": ra}
	}
	tests := []struct {
		name, kid string
		key       *rsa.PrivateKey
		claims    jwt.MapClaims
		db        string
		want      string // "user application_name", or the error text
		ok        bool
	}{
		{"highest role wins", "kid-a", good, access(map[string][]string{"postgres.stg:appdb": {"read_only", "read_write"}}), "appdb", "tk_rw billing-app", true},
		{"owner", "kid-a", good, access(map[string][]string{"postgres.stg:appdb": {"owner"}, "postgres.stg:other": {"read_only"}}), "appdb", "tk_owner billing-app", true},
		{"read_only", "kid-a", good, access(map[string][]string{"x:appdb": {"read_only"}}), "appdb", "tk_ro billing-app", true},
		{"role for another database only", "kid-a", good, access(map[string][]string{"postgres.stg:other": {"owner"}}), "appdb", "Token may not contain valid roles for the requested databases", false},
		{"key without a colon", "kid-a", good, access(map[string][]string{"appdb": {"owner"}}), "appdb", "Token may not contain valid roles for the requested databases", false},
		{"unknown roles only", "kid-a", good, access(map[string][]string{"p:appdb": {"admin"}}), "appdb", "Token may not contain valid roles", false},
		{"wrong kid", "kid-b", good, access(map[string][]string{"p:appdb": {"owner"}}), "appdb", "key id", false},
		{"no kid", "", good, access(map[string][]string{"p:appdb": {"owner"}}), "appdb", "key id", false},
		{"wrong key", "kid-a", evil, access(map[string][]string{"p:appdb": {"owner"}}), "appdb", "signature", false},
		{"expired", "kid-a", good, jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix(), "resource_access": map[string]any{"p:appdb": map[string]any{"roles": []any{"owner"}}}}, "appdb", "expired", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mint(t, tt.key, tt.kid, tt.claims)
			out, err := psqlWho(t, d, "talos", tt.db, tok)
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, tt.want, out)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}
