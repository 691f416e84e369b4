package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

// tlsEnv is the PostgreSQL side of the server TLS tests: the shared
// plaintext cluster pg, a cluster with ssl=on whose certificate is valid
// for localhost/127.0.0.1 (tlsPG), and one whose certificate names only
// db.example.invalid (otherPG).
type tlsEnv struct {
	certs            *testcerts.Set
	tlsPG, otherPG   *pgtest.Cluster
	verifiers        map[string]string // user → SCRAM verifier, on every cluster
	client, wrongCli testcerts.Pair    // for tls_mtls: from the CA, from the wrong CA
}

// tlsUsers: tls_any logs in with or without TLS; tls_ssl only over TLS
// (hostssl); tls_nossl only without (hostnossl); tls_mtls only over TLS
// with a client certificate whose CN is its name.
var tlsHba = []string{
	"hostssl all tls_ssl 127.0.0.1/32 scram-sha-256",
	"host all tls_ssl 127.0.0.1/32 reject",
	"hostnossl all tls_nossl 127.0.0.1/32 scram-sha-256",
	"host all tls_nossl 127.0.0.1/32 reject",
	"hostssl all tls_mtls 127.0.0.1/32 scram-sha-256 clientcert=verify-full",
	"host all tls_mtls 127.0.0.1/32 reject",
}

// newTLSEnv starts the two ssl=on clusters for the test t and creates the
// users on them and on pg.
func newTLSEnv(t *testing.T) *tlsEnv {
	setup(t)
	certs, err := testcerts.New(t.TempDir())
	require.NoError(t, err)
	e := &tlsEnv{certs: certs, verifiers: map[string]string{}}
	e.client, err = certs.CA.Issue("tls_mtls")
	require.NoError(t, err)
	e.wrongCli, err = certs.WrongCA.Issue("tls_mtls")
	require.NoError(t, err)
	e.tlsPG = pgtest.Start(t, pgtest.Options{TLS: certs, ExtraHba: tlsHba})
	other := *certs
	other.Server, err = certs.CA.Issue("other", "db.example.invalid")
	require.NoError(t, err)
	e.otherPG = pgtest.Start(t, pgtest.Options{TLS: &other, ExtraHba: tlsHba})
	for _, u := range []string{"tls_any", "tls_ssl", "tls_nossl", "tls_mtls"} {
		// The same verifier on every cluster: SCRAM passthrough replays
		// the client's ClientKey, which only matches the same StoredKey.
		v := e.tlsPG.CreateUser(t, u, u+"-pw", "scram-sha-256")
		e.verifiers[u] = v
		e.otherPG.Exec(t, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, u, v))
		pg.Exec(t, fmt.Sprintf(`DROP ROLE IF EXISTS %s`, u))
		pg.Exec(t, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, u, v))
	}
	return e
}

// doorman starts pg_doorman with one pool "tlsdb" for user towards c.
func (e *tlsEnv) doorman(t *testing.T, c *pgtest.Cluster, serverHost, user, general string) *apptest.Instance {
	return apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
%s
pools:
  tlsdb:
    server_host: %s
    server_port: %d
    server_database: postgres
    users:
      - username: %s
        password: '%s'
        pool_size: 4
`, indent(general), serverHost, c.Port, user, e.verifiers[user]))
}

func indent(general string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(general), "\n") {
		if l != "" {
			b.WriteString("  " + strings.TrimSpace(l) + "\n")
		}
	}
	return b.String()
}

// backendSSL logs in through pg_doorman (SCRAM, passthrough to the
// server) and asks PostgreSQL whether pg_doorman's backend uses TLS.
func backendSSL(t *testing.T, d *apptest.Instance, user string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.DSN(user, user+"-pw", "tlsdb")+" default_query_exec_mode=exec")
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var ssl bool
	err = conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl)
	return ssl, err
}

// TestServerTLS runs the server TLS scenarios on one set of clusters.
func TestServerTLS(t *testing.T) {
	e := newTLSEnv(t)
	t.Run("modes", func(t *testing.T) { testServerTLSModes(t, e) })
	t.Run("reload", func(t *testing.T) { testServerTLSReload(t, e) })
	t.Run("fallback", func(t *testing.T) { testServerTLSFallback(t, e) })
}

// testServerTLSModes: each server_tls_mode against PostgreSQL with ssl=on
// and without, with pg_hba rules that demand or forbid TLS; the answer
// comes from pg_stat_ssl on the server, through pg_doorman, whose clients
// log in with SCRAM passed through to the server.
func testServerTLSModes(t *testing.T, e *tlsEnv) {
	ca, wrongCA := e.certs.CA.Cert, e.certs.WrongCA.Cert
	tests := []struct {
		name    string
		cluster *pgtest.Cluster
		host    string
		user    string
		general string
		want    bool   // backend encrypted
		fails   string // "" = login succeeds; else why (the reason label of the error counter, "" for a server error)
	}{
		{name: "disable: plaintext though TLS is offered", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: disable", want: false},
		{name: "disable: hostssl-only user fails", cluster: e.tlsPG, user: "tls_ssl", general: "server_tls_mode: disable", fails: "server"},
		{name: "allow: plaintext when accepted", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: allow", want: false},
		{name: "allow: TLS when pg_hba has only hostssl", cluster: e.tlsPG, user: "tls_ssl", general: "server_tls_mode: allow", want: true},
		{name: "allow (default): non-TLS server", cluster: pg, user: "tls_any", general: "", want: false},
		{name: "prefer: TLS when offered", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: prefer", want: true},
		{name: "prefer: plaintext when not offered", cluster: pg, user: "tls_any", general: "server_tls_mode: prefer", want: false},
		{name: "prefer: plaintext when TLS is refused by hostnossl", cluster: e.tlsPG, user: "tls_nossl", general: "server_tls_mode: prefer", want: false},
		{name: "require: TLS", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: require", want: true},
		{name: "require: any certificate", cluster: e.otherPG, user: "tls_any", general: "server_tls_mode: require", want: true},
		{name: "require: non-TLS server fails", cluster: pg, user: "tls_any", general: "server_tls_mode: require", fails: "refused"},
		{name: "require with a CA verifies the chain", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: require\nserver_tls_ca_cert: " + wrongCA, fails: "certificate"},
		{name: "verify-ca: right CA", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: verify-ca\nserver_tls_ca_cert: " + ca, want: true},
		{name: "verify-ca: name not checked", cluster: e.otherPG, user: "tls_any", general: "server_tls_mode: verify-ca\nserver_tls_ca_cert: " + ca, want: true},
		{name: "verify-ca: wrong CA fails", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: verify-ca\nserver_tls_ca_cert: " + wrongCA, fails: "certificate"},
		{name: "verify-full: 127.0.0.1 in the certificate", cluster: e.tlsPG, user: "tls_any", general: "server_tls_mode: verify-full\nserver_tls_ca_cert: " + ca, want: true},
		{name: "verify-full: localhost in the certificate", cluster: e.tlsPG, host: "localhost", user: "tls_any", general: "server_tls_mode: verify-full\nserver_tls_ca_cert: " + ca, want: true},
		{name: "verify-full: wrong host name fails", cluster: e.otherPG, user: "tls_any", general: "server_tls_mode: verify-full\nserver_tls_ca_cert: " + ca, fails: "hostname"},
		{name: "verify-full: non-TLS server fails", cluster: pg, user: "tls_any", general: "server_tls_mode: verify-full\nserver_tls_ca_cert: " + ca, fails: "refused"},
		{name: "mTLS: client certificate accepted", cluster: e.tlsPG, user: "tls_mtls", general: mtls("verify-full", ca, e.client), want: true},
		{name: "mTLS: no client certificate fails", cluster: e.tlsPG, user: "tls_mtls", general: "server_tls_mode: verify-full\nserver_tls_ca_cert: " + ca, fails: "server"},
		{name: "mTLS: client certificate of another CA fails", cluster: e.tlsPG, user: "tls_mtls", general: mtls("verify-full", ca, e.wrongCli), fails: "alert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := tt.host
			if host == "" {
				host = "127.0.0.1"
			}
			d := e.doorman(t, tt.cluster, host, tt.user, tt.general)
			ssl, err := backendSSL(t, d, tt.user)
			if tt.fails != "" {
				require.ErrorContains(t, err, "server login failed")
				counted := map[string]float64{}
				for _, r := range []string{"refused", "certificate", "hostname", "alert", "handshake"} {
					if n := metricValue(t, d, "pg_doorman_server_tls_handshake_errors_total", "reason", r); n > 0 {
						counted[r] = n
					}
				}
				if tt.fails == "server" {
					require.Empty(t, counted, "the server refused the login, TLS was fine (%v)", err)
				} else {
					require.Len(t, counted, 1, "one reason counted: %v (%v)", counted, err)
					require.Contains(t, counted, tt.fails, "%v", err)
					require.ErrorContains(t, err, "TLS to the server failed", "the client is told why")
					require.ErrorContains(t, err, ": "+tt.fails+")")
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, ssl, "pg_stat_ssl.ssl of pg_doorman's backend")
			open := 0.0
			if tt.want {
				open = 1 // the pool keeps the connection the client used
			}
			require.Equal(t, open, metricValue(t, d, "pg_doorman_server_tls_connections"))
			servers := showServers(t, d)
			require.Len(t, servers, 1)
			if tt.want {
				require.Regexp(t, `^TLSv1\.[23]/TLS_[A-Z0-9_]+$`, servers[0]["tls"])
			} else {
				require.Empty(t, servers[0]["tls"])
			}
			if tt.want {
				require.GreaterOrEqual(t, metricValue(t, d, "pg_doorman_server_tls_handshake_duration_seconds"), 1.0, "handshakes observed")
			}
		})
	}
}

// metricValue reads one series from pg_doorman's registry (a histogram
// gives its sample count); labels are name, value pairs. 0 when absent.
func metricValue(t *testing.T, d *apptest.Instance, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := d.Metrics.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func mtls(mode, ca string, p testcerts.Pair) string {
	return fmt.Sprintf("server_tls_mode: %s\nserver_tls_ca_cert: %s\nserver_tls_certificate: %s\nserver_tls_private_key: %s", mode, ca, p.Cert, p.Key)
}

// showServers runs SHOW SERVERS on pg_doorman's admin console.
func showServers(t *testing.T, d *apptest.Instance) []map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, d.DSN("admin", "admin-secret", "pgdoorman"))
	require.NoError(t, err)
	defer admin.Close(ctx)
	res, err := admin.PgConn().Exec(ctx, "SHOW SERVERS").ReadAll()
	require.NoError(t, err)
	require.Len(t, res, 1)
	var out []map[string]string
	for _, row := range res[0].Rows {
		m := map[string]string{}
		for i, f := range res[0].FieldDescriptions {
			m[f.Name] = string(row[i])
		}
		out = append(out, m)
	}
	return out
}

// testServerTLSReload: the client certificate towards PostgreSQL is
// rotated on disk and a reload (what SIGHUP runs) picks it up: new server
// connections use the new material, the client connected throughout keeps
// its server connection (same backend, same certificate), nothing drops.
func testServerTLSReload(t *testing.T, e *tlsEnv) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "pg_client.crt"), filepath.Join(dir, "pg_client.key")
	install := func(p testcerts.Pair) {
		for _, f := range [][2]string{{p.Cert, cert}, {p.Key, key}} {
			b, err := os.ReadFile(f[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f[1], b, 0o600))
		}
	}
	install(e.client)
	second, err := e.certs.CA.Issue("tls_mtls")
	require.NoError(t, err)
	d := e.doorman(t, e.tlsPG, "127.0.0.1", "tls_mtls",
		mtls("verify-full", e.certs.CA.Cert, testcerts.Pair{Cert: cert, Key: key}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := d.DSN("tls_mtls", "tls_mtls-pw", "tlsdb") + " default_query_exec_mode=exec"
	const who = "SELECT pg_backend_pid(), s.ssl, s.client_serial::text FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()"
	a, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer a.Close(ctx)
	_, err = a.Exec(ctx, "BEGIN") // holds its server connection across the reloads
	require.NoError(t, err)
	var pid, pid2 int
	var ssl bool
	var serial1, serial2 string
	require.NoError(t, a.QueryRow(ctx, who).Scan(&pid, &ssl, &serial1))
	require.True(t, ssl)
	servers := showServers(t, d)
	require.Len(t, servers, 1)
	require.Equal(t, "active", servers[0]["state"])
	require.Regexp(t, `^TLSv1\.[23]/`, servers[0]["tls"])

	// Rotate to a certificate of another CA: new connections must fail.
	install(e.wrongCli)
	require.NoError(t, d.Daemon.Reload())
	_, err = backendSSL(t, d, "tls_mtls")
	require.ErrorContains(t, err, "could not connect to server", "a new server connection uses the rotated (wrong-CA) certificate")
	require.GreaterOrEqual(t, metricValue(t, d, "pg_doorman_server_tls_handshake_errors_total", "reason", "alert"), 1.0)
	require.NoError(t, a.QueryRow(ctx, who).Scan(&pid2, &ssl, &serial2))
	require.Equal(t, pid, pid2, "the connected client keeps its server connection")
	require.Equal(t, serial1, serial2)

	// Rotate to a second good certificate: new connections present it.
	install(second)
	require.NoError(t, d.Daemon.Reload())
	b, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer b.Close(ctx)
	var bpid int
	var bserial string
	require.NoError(t, b.QueryRow(ctx, who).Scan(&bpid, &ssl, &bserial))
	require.True(t, ssl)
	require.NotEqual(t, pid, bpid, "a new server connection")
	require.NotEqual(t, serial1, bserial, "made with the rotated certificate")

	// A reload with a broken file fails and keeps the running material.
	require.NoError(t, os.WriteFile(key, []byte("garbage"), 0o600))
	require.Error(t, d.Daemon.Reload())

	require.NoError(t, a.QueryRow(ctx, who).Scan(&pid2, &ssl, &serial2))
	require.Equal(t, pid, pid2, "still the first server connection")
	require.Equal(t, serial1, serial2)
	_, err = a.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.Equal(t, 2.0, metricValue(t, d, "pg_doorman_server_tls_connections"), "both server connections stay open")
	a.Close(ctx)
	b.Close(ctx)
	p, ok := d.Daemon.Pools.Lookup("tlsdb", "tls_mtls")
	require.True(t, ok)
	p.Conns().Reconnect()
	require.Eventually(t, func() bool { return metricValue(t, d, "pg_doorman_server_tls_connections") == 0 },
		10*time.Second, 10*time.Millisecond, "closed TLS connections leave the gauge")
}

// testServerTLSFallback: Patroni-assisted fallback connections use the
// same server_tls_mode: with the local server gone, the fallback member is
// reached over TLS and verified (verify-full), and a member whose
// certificate names another host is refused.
func testServerTLSFallback(t *testing.T, e *tlsEnv) {
	for _, tt := range []struct {
		name   string
		member *pgtest.Cluster
		ok     bool
	}{
		{"verified member", e.tlsPG, true},
		{"member with a certificate for another name", e.otherPG, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			patroni := patronitest.NewServer(t, []byte(fmt.Sprintf(`{"members": [
  {"name": "node2", "role": "sync_standby", "state": "streaming", "host": "127.0.0.1", "port": %d, "api_url": "http://127.0.0.1:2/patroni", "timeline": 1, "lag": 0}
]}`, tt.member.Port)))
			d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  patroni_api_urls: ["%s"]
  fallback_connect_timeout: 2s
  server_tls_mode: verify-full
  server_tls_ca_cert: %s
pools:
  tlsdb:
    server_host: 127.0.0.1
    server_port: %d
    server_database: postgres
    users:
      - username: tls_any
        password: '%s'
        pool_size: 4
`, patroni.URL(), e.certs.CA.Cert, apptest.FreePort(t), e.verifiers["tls_any"]))
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, d.DSN("tls_any", "tls_any-pw", "tlsdb")+" default_query_exec_mode=exec")
			if !tt.ok {
				require.Error(t, err)
				require.GreaterOrEqual(t, metricValue(t, d, "pg_doorman_server_tls_handshake_errors_total", "reason", "hostname"), 1.0)
				return
			}
			require.NoError(t, err)
			defer c.Close(ctx)
			var ssl bool
			var port string
			require.NoError(t, c.QueryRow(ctx, "SELECT s.ssl, current_setting('port') FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()").Scan(&ssl, &port))
			require.Equal(t, fmt.Sprint(tt.member.Port), port, "the query ran on the fallback member")
			require.True(t, ssl, "the fallback connection uses TLS")
		})
	}
}
