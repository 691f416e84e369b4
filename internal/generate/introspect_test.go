package generate

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestGeneratedConfigLogsIn: introspect a real server with a SCRAM role,
// an MD5 role, a role without password and a second database; the
// rendered file loads, and pg_doorman started from it lets psql in as
// both roles with their real passwords, in both databases.
func TestGeneratedConfigLogsIn(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	pg.CreateUser(t, "alice", "alice secret", "scram-sha-256")
	pg.CreateUser(t, "bob", "bob's md5", "md5")
	pg.Exec(t, "CREATE ROLE nopass LOGIN")
	pg.CreateDatabase(t, "second")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := Introspect(ctx, Options{Host: pg.Host, Port: pg.Port, User: "postgres"})
	require.NoError(t, err)
	require.Equal(t, "pg_authid", inv.Source)
	require.Equal(t, pg.Host, inv.ServerHost)
	require.Equal(t, pg.Port, inv.ServerPort)
	require.Equal(t, []string{"postgres", "second"}, inv.Databases)
	verifiers := map[string]string{}
	for _, r := range inv.Roles {
		verifiers[r.Name] = r.Verifier
	}
	require.True(t, strings.HasPrefix(verifiers["alice"], config.SCRAMPrefix), verifiers["alice"])
	require.True(t, strings.HasPrefix(verifiers["bob"], config.MD5Prefix), verifiers["bob"])
	require.Contains(t, verifiers, "nopass")
	require.Empty(t, verifiers["nopass"])

	plan, err := NewPlan(inv, rand.Reader)
	require.NoError(t, err)
	for _, f := range []Format{YAML, TOML} {
		var b bytes.Buffer
		require.NoError(t, Render(&b, plan, f, English))
		path := filepath.Join(t.TempDir(), "generated."+strings.ToLower(f.String()))
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
		_, _, err := config.Load(path)
		require.NoError(t, err, "%s", b.String())
	}

	var b bytes.Buffer
	require.NoError(t, Render(&b, plan, YAML, English))
	require.Contains(t, b.String(), "nopass", "the header names the role without password")
	// apptest picks the port and the socket directory.
	tmpl := regexp.MustCompile(`(?m)^  port: 6432$`).ReplaceAllString(b.String(), "  port: {{PORT}}")
	tmpl = strings.Replace(tmpl, "\ngeneral:\n", "\ngeneral:\n  unix_socket_dir: \"{{DIR}}\"\n", 1)
	d := apptest.Start(t, tmpl)

	psql, err := pgtest.FindBinary("psql")
	require.NoError(t, err)
	logins := []struct{ user, password string }{{"alice", "alice secret"}, {"bob", "bob's md5"}}
	for _, l := range logins {
		for _, db := range inv.Databases {
			t.Run(l.user+"@"+db, func(t *testing.T) {
				out, err := runPsql(ctx, psql, d.Port, l.user, l.password, db)
				require.NoError(t, err, "%s", out)
				require.Equal(t, l.user+"|"+db, strings.TrimSpace(out))
			})
		}
	}
	t.Run("wrong password", func(t *testing.T) {
		out, err := runPsql(ctx, psql, d.Port, "alice", "not it", "postgres")
		require.Error(t, err)
		require.Contains(t, out, "password authentication failed")
	})
}

func runPsql(ctx context.Context, psql string, port int, user, password, db string) (string, error) {
	cmd := exec.CommandContext(ctx, psql, "-X", "-A", "-t", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", user, "-d", db,
		"-c", "SELECT current_user || '|' || current_database()")
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PG") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestIntrospectNeedsSuperuser: without a superuser neither pg_authid nor
// pg_shadow is readable, and the error says so.
func TestIntrospectNeedsSuperuser(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	pg.CreateUser(t, "carol", "carol pw", "scram-sha-256")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Introspect(ctx, Options{Host: pg.Host, Port: pg.Port, User: "carol", Password: "carol pw", Database: "postgres"})
	require.ErrorContains(t, err, "needs a superuser")
	require.ErrorContains(t, err, "pg_authid")
	require.ErrorContains(t, err, "pg_shadow")
}

// TestIntrospectSocket: a unix socket directory as host becomes the pools'
// server_host.
func TestIntrospectSocket(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := Introspect(ctx, Options{Host: pg.SocketDir, Port: pg.Port, User: "postgres"})
	require.NoError(t, err)
	require.Equal(t, pg.SocketDir, inv.ServerHost)
	plan, err := NewPlan(inv, rand.Reader)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Render(&b, plan, TOML, NoComments))
	require.Contains(t, b.String(), `server_host = "`+pg.SocketDir+`"`)
}

// TestIntrospectOneServer: a host list is refused before connecting; the
// pools could only point at one of them.
func TestIntrospectOneServer(t *testing.T) {
	_, err := Introspect(context.Background(), Options{Host: "127.0.0.1,127.0.0.2", Port: 1, User: "postgres"})
	require.ErrorContains(t, err, "several servers")
}
