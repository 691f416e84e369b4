package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// reloadMarker is what the postmaster logs when it handles SIGHUP. It is
// logged while pg_hba.conf is being reloaded, and connections are accepted
// only after that, so a connection made after the line appears sees the
// new rules.
const reloadMarker = "received SIGHUP, reloading configuration files"

// CreateUser creates a LOGIN role whose password is hashed with method
// ("md5" or "scram-sha-256"; "" means the cluster's password_encryption) and
// returns the verifier stored in pg_authid.rolpassword. When the catch-all
// TCP method is md5 or scram-sha-256, a "host all <name> 127.0.0.1/32
// <method>" line is added for the whole replication group so the user can
// log in over TCP; other catch-all methods are left to apply.
// Replicas receive the role asynchronously.
func (c *Cluster) CreateUser(t testing.TB, name, password, method string) string {
	t.Helper()
	if method == "" {
		method = c.opts.PasswordEncryption
	}
	if method != methodMD5 && method != methodSCRAM {
		t.Fatalf("pgtest: create user %q: method %q: want %q or %q", name, method, methodMD5, methodSCRAM)
	}
	if name == "" || strings.ContainsAny(name, "\"\x00\n\r") || strings.ContainsRune(password, 0) {
		t.Fatalf("pgtest: create user %q: name or password not supported", name)
	}
	var verifier string
	err := c.withConn("postgres", func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "SELECT set_config('password_encryption', $1, false)", method); err != nil {
			return fmt.Errorf("set password_encryption: %w", err)
		}
		// CREATE ROLE takes no parameters, hence the quoting.
		sql := "CREATE ROLE " + pgx.Identifier{name}.Sanitize() + " LOGIN PASSWORD " + quoteLiteral(password)
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("create role: %w", err)
		}
		return conn.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", name).Scan(&verifier)
	})
	if err != nil {
		t.Fatalf("pgtest: create user %q on %s: %v", name, c.Name, err)
	}
	if line := userHbaLine(c.opts.HostAuthMethod, name, method); line != "" {
		c.AddHbaLine(t, line)
	}
	return verifier
}

// AddHbaLine adds a pg_hba.conf line after the harness's trust lines and
// before the catch-all line, on every cluster of the replication group, and
// waits until the running ones have reloaded it.
func (c *Cluster) AddHbaLine(t testing.TB, line string) {
	t.Helper()
	if strings.ContainsAny(line, "\n\r") {
		t.Fatalf("pgtest: hba line %q contains a newline", line)
	}
	c.group.mu.Lock()
	c.group.userLines = append(c.group.userLines, line)
	members := append([]*Cluster(nil), c.group.members...)
	c.group.mu.Unlock()
	for _, m := range members {
		if err := m.writeHba(); err != nil {
			t.Fatalf("pgtest: %s: %v", m.Name, err)
		}
		if _, err := m.PID(); err != nil {
			continue // stopped: the next start reads the file
		}
		if err := m.reload(); err != nil {
			t.Fatalf("pgtest: %s: %v", m.Name, err)
		}
	}
}

// Reload makes the server reread its configuration files and waits until
// it has; it fails the test if pg_hba.conf has errors.
func (c *Cluster) Reload(t testing.TB) {
	t.Helper()
	if err := c.reload(); err != nil {
		t.Fatalf("pgtest: %s: %v", c.Name, err)
	}
}

func (c *Cluster) writeHba() error {
	c.group.mu.Lock()
	lines := append([]string(nil), c.group.userLines...)
	c.group.mu.Unlock()
	return c.env.writeOwned(filepath.Join(c.DataDir, "pg_hba.conf"), renderHba(c.opts, lines))
}

func (c *Cluster) reload() error {
	before := c.countReloads()
	return c.withConn("postgres", func(ctx context.Context, conn *pgx.Conn) error {
		var bad []string
		rows, err := conn.Query(ctx, "SELECT line_number || ': ' || error FROM pg_hba_file_rules WHERE error IS NOT NULL")
		if err == nil {
			bad, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			return fmt.Errorf("check pg_hba.conf: %w", err)
		}
		if len(bad) > 0 {
			return fmt.Errorf("pg_hba.conf has errors: %s", strings.Join(bad, "; "))
		}
		if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return fmt.Errorf("reload: %w", err)
		}
		for c.countReloads() <= before {
			select {
			case <-ctx.Done():
				return errors.New("reload: server did not log the reload")
			case <-time.After(pollInterval):
			}
		}
		return nil
	})
}

// countReloads counts the postmaster's reload lines in the log.
func (c *Cluster) countReloads() int {
	b, _ := os.ReadFile(c.LogFile)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, reloadMarker) {
			n++
		}
	}
	return n
}
