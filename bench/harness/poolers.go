package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

// preparedDB is the pooler database of the -M prepared test: the same
// server database, with the smaller PreparedPoolSize pool.
const preparedDB = "bench_prep"

// pooler is a running pg_doorman or PgBouncer.
type pooler struct {
	name    string
	port    int
	proc    *process
	sslmode string // libpq sslmode its clients use: disable, or require when it listens with TLS
}

// dsn is a pgx DSN for benchUser through the pooler.
func (p *pooler) dsn(db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=%s",
		p.port, benchUser, benchPassword, db, p.sslmode)
}

// sslmode is what clients of a pooler configured with c use.
func (c poolerConfig) sslmode() string {
	if c.tls.Cert != "" {
		return "require"
	}
	return "disable"
}

// poolerConfig is what both poolers are configured from.
type poolerConfig struct {
	dir        string // work directory for config, auth file and log
	pgPort     int
	verifier   string
	poolSize   int
	prepSize   int
	maxClients int // client connections the pooler must accept
	promPort   int // pg_doorman's Prometheus port on 127.0.0.1; 0: exporter off
	// tls, when set, makes the pooler require TLS from clients with this
	// certificate; towards PostgreSQL both poolers stay plaintext.
	tls testcerts.Pair
}

// startDoorman writes a YAML config and starts bin/pg_doorman.
func startDoorman(ctx context.Context, bin, tag string, c poolerConfig) (*pooler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(c.dir, tag+".yaml")
	if err := os.WriteFile(cfgPath, []byte(doormanYAML(port, c)), 0o600); err != nil {
		return nil, fmt.Errorf("write pg_doorman config: %w", err)
	}
	proc, err := startProcess("pg_doorman", filepath.Join(c.dir, tag+".log"), nil, bin, cfgPath)
	if err != nil {
		return nil, err
	}
	p := &pooler{name: "pg_doorman", port: port, proc: proc, sslmode: c.sslmode()}
	if err := proc.waitLogin(ctx, p.dsn(benchDB)); err != nil {
		_ = proc.stop()
		return nil, err
	}
	return p, nil
}

func doormanYAML(port int, c poolerConfig) string {
	pool := func(name string, size int) string {
		return fmt.Sprintf(`  %s:
    server_host: "127.0.0.1"
    server_port: %d
    server_database: %q
    pool_mode: "transaction"
    users:
      - username: %q
        password: %q
        pool_size: %d
`, name, c.pgPort, benchDB, benchUser, c.verifier, size)
	}
	return fmt.Sprintf(`# written by bench/harness
general:
  host: "127.0.0.1"
  port: %d
  unix_socket_dir: %q
  daemon_pid_file: %q
  max_connections: %d
  log_client_connections: false
  log_client_disconnections: false
  log_level: "warn"
`, port, c.dir, filepath.Join(c.dir, "pg_doorman.pid"), max(8192, c.maxClients)) +
		doormanTLSYAML(c.tls) + prometheusYAML(c.promPort) + "pools:\n" + pool(benchDB, c.poolSize) + pool(preparedDB, c.prepSize)
}

// doormanTLSYAML is the client TLS part of the general section, empty
// when p is unset.
func doormanTLSYAML(p testcerts.Pair) string {
	if p.Cert == "" {
		return ""
	}
	return fmt.Sprintf("  tls_mode: \"require\"\n  tls_certificate: %q\n  tls_private_key: %q\n  server_tls_mode: \"disable\"\n", p.Cert, p.Key)
}

// prometheusYAML is the exporter section, empty when port is 0.
func prometheusYAML(port int) string {
	if port == 0 {
		return ""
	}
	return fmt.Sprintf("prometheus:\n  enabled: true\n  host: \"127.0.0.1\"\n  port: %d\n", port)
}

// startPgBouncer writes an ini and a SCRAM auth_file and starts pgbouncer
// (as the postgres OS user when we are root).
func startPgBouncer(ctx context.Context, bin, tag string, c poolerConfig) (*pooler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	authPath := filepath.Join(c.dir, tag+".users")
	iniPath := filepath.Join(c.dir, tag+".ini")
	logPath := filepath.Join(c.dir, tag+".log")
	files := map[string]string{
		authPath: fmt.Sprintf("%q %q\n", benchUser, c.verifier),
		iniPath:  pgbouncerINI(port, authPath, logPath, c),
	}
	for path, body := range files {
		if err := writeForUser(path, body, cred); err != nil {
			return nil, err
		}
	}
	proc, err := startProcess("pgbouncer", filepath.Join(c.dir, tag+".stderr"), cred, bin, iniPath)
	if err != nil {
		return nil, err
	}
	p := &pooler{name: "pgbouncer", port: port, proc: proc, sslmode: c.sslmode()}
	if err := proc.waitLogin(ctx, p.dsn(benchDB)); err != nil {
		_ = proc.stop()
		return nil, err
	}
	return p, nil
}

func pgbouncerINI(port int, authPath, logPath string, c poolerConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "; written by bench/harness\n[databases]\n")
	fmt.Fprintf(&b, "%s = host=127.0.0.1 port=%d dbname=%s\n", benchDB, c.pgPort, benchDB)
	fmt.Fprintf(&b, "%s = host=127.0.0.1 port=%d dbname=%s pool_size=%d\n", preparedDB, c.pgPort, benchDB, c.prepSize)
	fmt.Fprintf(&b, "\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = %d\nunix_socket_dir =\n", port)
	fmt.Fprintf(&b, "auth_type = scram-sha-256\nauth_file = %s\npool_mode = transaction\n", authPath)
	fmt.Fprintf(&b, "default_pool_size = %d\nmax_client_conn = %d\n", c.poolSize, c.maxClients)
	fmt.Fprintf(&b, "logfile = %s\nlog_connections = 0\nlog_disconnections = 0\n", logPath)
	if c.tls.Cert != "" { // server_tls_sslmode stays at its default, disable
		fmt.Fprintf(&b, "client_tls_sslmode = require\nclient_tls_cert_file = %s\nclient_tls_key_file = %s\n", c.tls.Cert, c.tls.Key)
	}
	return b.String()
}

// writeForUser writes a file readable by the user of cred (nil: ourselves).
func writeForUser(path, body string, cred *syscall.Credential) error {
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if cred == nil {
		return nil
	}
	if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}
