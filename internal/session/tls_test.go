package session_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/clienttls"
	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

// Client-side TLS (clients → pg_doorman) against the package's PostgreSQL,
// with certificates from testcerts: pg_doorman shows Set.Server (valid for
// localhost and 127.0.0.1), clients trust Set.CA.

// tlEnv is a TLS test's certificates and a client certificate of each CA.
type tlEnv struct {
	set         *testcerts.Set
	cert, key   string // what pg_doorman's config names (copies, so rotation can overwrite them)
	client      testcerts.Pair
	wrongClient testcerts.Pair
}

func tlCerts(t testing.TB) *tlEnv {
	t.Helper()
	set, err := testcerts.New(t.TempDir())
	require.NoError(t, err)
	e := &tlEnv{set: set, cert: filepath.Join(set.Dir, "doorman.crt"), key: filepath.Join(set.Dir, "doorman.key")}
	tlInstall(t, e, set.Server)
	e.client, err = set.CA.Issue("app")
	require.NoError(t, err)
	e.wrongClient, err = set.WrongCA.Issue("app")
	require.NoError(t, err)
	return e
}

// tlInstall copies a certificate and key to the paths pg_doorman reads.
func tlInstall(t testing.TB, e *tlEnv, p testcerts.Pair) {
	t.Helper()
	for src, dst := range map[string]string{p.Cert: e.cert, p.Key: e.key} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, 0o600))
	}
}

// tlGeneral is the general-section TLS settings for mode.
func tlGeneral(e *tlEnv, mode string) string {
	g := fmt.Sprintf("  tls_mode: %s\n  tls_certificate: %q\n  tls_private_key: %q\n", mode, e.cert, e.key)
	if mode == "verify-full" {
		g += fmt.Sprintf("  tls_ca_cert: %q\n", e.set.CA.Cert)
	}
	return g
}

func tlStart(t *testing.T, e *tlEnv, mode, extra string) *apptest.Instance {
	t.Helper()
	return start(t, tlGeneral(e, mode)+extra, "transaction", 2)
}

// tlDSN is a libpq/pgx DSN to pg_doorman over TCP with sslmode and extra
// settings.
func tlDSN(d *apptest.Instance, e *tlEnv, user, password, db, sslmode string, extra ...string) string {
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=%s sslrootcert=%s connect_timeout=10",
		d.Port, user, password, db, sslmode, e.set.CA.Cert)
	return strings.Join(append([]string{dsn}, extra...), " ")
}

func tlClientCert(p testcerts.Pair) string {
	return fmt.Sprintf("sslcert=%s sslkey=%s", p.Cert, p.Key)
}

// tlConnect connects with pgx and runs SELECT 1; it returns the error.
func tlConnect(t *testing.T, dsn string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		_ = c.Close(ctx)
		return err
	}
	require.Equal(t, 1, one)
	// pgx sends close_notify after Terminate: it must not meet a reset.
	require.NoError(t, c.Close(ctx))
	return nil
}

// tlSSLRequest sends an SSLRequest on a new connection and returns the
// answer byte and the connection.
func tlSSLRequest(t *testing.T, port int) (byte, net.Conn) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(15*time.Second)))
	_, err = nc.Write([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f})
	require.NoError(t, err)
	var b [1]byte
	_, err = io.ReadFull(nc, b[:])
	require.NoError(t, err)
	return b[0], nc
}

// tlStartupTLS negotiates TLS after an SSLRequest with cc, sends a
// StartupMessage for app@appdb and returns the first answer or the error
// (a TLS 1.3 client learns that its certificate was refused only then).
func tlStartupTLS(t *testing.T, port int, cc *tls.Config, appName string) (pgproto3.BackendMessage, error) {
	t.Helper()
	answer, nc := tlSSLRequest(t, port)
	require.Equal(t, byte('S'), answer)
	tc := tls.Client(nc, cc)
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	fe := pgproto3.NewFrontend(tc, tc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "app", "database": "appdb", "application_name": appName}})
	if err := fe.Flush(); err != nil {
		return nil, err
	}
	return fe.Receive()
}

// tlAlwaysSend makes a Go client send pair even when the server's
// CertificateRequest names other CAs (Go would otherwise send none).
func tlAlwaysSend(t *testing.T, p testcerts.Pair) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	t.Helper()
	pair, err := p.TLS()
	require.NoError(t, err)
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
}

// tlAdmin connects to the admin console (simple protocol only).
func tlAdmin(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// tlMetric is the value of a counter or gauge series of pg_doorman with
// one label (counterValue).
func tlMetric(t *testing.T, d *apptest.Instance, family, label, value string) float64 {
	t.Helper()
	return counterValue(t, d, family, label, value)
}

// TestTLSModes: each tls_mode answers SSLRequest and accepts or refuses
// plaintext, TLS, and client certificates as it should.
func TestTLSModes(t *testing.T) {
	e := tlCerts(t)
	plain := func(d *apptest.Instance) string { return d.DSN("app", "app-secret", "appdb") }
	tlsNoCert := func(d *apptest.Instance) string {
		return tlDSN(d, e, "app", "app-secret", "appdb", "verify-full")
	}
	tlsCert := func(d *apptest.Instance) string {
		return tlDSN(d, e, "app", "app-secret", "appdb", "verify-full", tlClientCert(e.client))
	}
	tlsWrongCert := func(d *apptest.Instance) string {
		return tlDSN(d, e, "app", "app-secret", "appdb", "verify-full", tlClientCert(e.wrongClient))
	}
	type attempt struct {
		name   string
		dsn    func(*apptest.Instance) string
		errSub string // "" = accepted
	}
	tests := []struct {
		mode     string
		answer   byte
		attempts []attempt
	}{
		{mode: "disable", answer: 'N', attempts: []attempt{
			{"plaintext", plain, ""},
			{"TLS", tlsNoCert, "server refused TLS connection"},
		}},
		{mode: "allow", answer: 'S', attempts: []attempt{
			{"plaintext", plain, ""},
			{"TLS", tlsNoCert, ""},
			{"TLS with a client certificate", tlsCert, ""},
		}},
		{mode: "require", answer: 'S', attempts: []attempt{
			{"plaintext", plain, "SSL required (SQLSTATE 08P01)"},
			{"TLS", tlsNoCert, ""},
		}},
		{mode: "verify-full", answer: 'S', attempts: []attempt{
			{"plaintext", plain, "SSL required (SQLSTATE 08P01)"},
			{"TLS without a client certificate", tlsNoCert, "certificate required"},
			{"TLS with a certificate of the wrong CA (Go sends none)", tlsWrongCert, "certificate required"},
			{"TLS with a certificate of the CA", tlsCert, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			var d *apptest.Instance
			if tt.mode == "disable" {
				d = start(t, "  tls_mode: disable", "transaction", 2)
			} else {
				d = tlStart(t, e, tt.mode, "")
			}
			answer, _ := tlSSLRequest(t, d.Port)
			require.Equal(t, string(tt.answer), string(answer), "answer to SSLRequest")
			for _, a := range tt.attempts {
				err := tlConnect(t, a.dsn(d))
				if a.errSub == "" {
					require.NoError(t, err, a.name)
				} else {
					require.ErrorContains(t, err, a.errSub, a.name)
				}
			}
			if tt.mode == "verify-full" {
				// A client that does send the wrong CA's certificate.
				_, err := tlStartupTLS(t, d.Port, &tls.Config{RootCAs: e.set.CA.Pool(), ServerName: "localhost",
					GetClientCertificate: tlAlwaysSend(t, e.wrongClient)}, "wrong")
				require.ErrorContains(t, err, "unknown certificate authority")
				// The client has the alert before the server's handshake
				// returns and counts it.
				require.Eventually(t, func() bool {
					return tlMetric(t, d, "pg_doorman_tls_handshake_failures_total", "reason", "bad_client_certificate") == 1
				}, 5*time.Second, 5*time.Millisecond)
			}
			// Over the unix socket TLS is neither offered nor required.
			require.NoError(t, tlConnect(t, d.SocketDSN("app", "app-secret", "appdb")))
		})
	}
}

// TestTLSPsqlAndPsycopg: libpq clients (psql, psycopg) with sslmode
// require and verify-full (host name localhost checked against the
// certificate), and channel_binding=require.
func TestTLSPsqlAndPsycopg(t *testing.T) {
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql is missing: apt-get install -y postgresql-client")
	e := tlCerts(t)
	d := tlStart(t, e, "require", "")
	for _, mode := range []string{"require", "verify-full"} {
		t.Run("psql "+mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn := fmt.Sprintf("host=localhost hostaddr=127.0.0.1 port=%d user=app dbname=appdb sslmode=%s sslrootcert=%s channel_binding=require",
				d.Port, mode, e.set.CA.Cert)
			cmd := exec.CommandContext(ctx, psql, "-X", "-A", "-t", "-d", dsn, "-c", "SELECT 40 + 2", "-c", `\conninfo`)
			cmd.Env = append(os.Environ(), "PGPASSWORD=app-secret")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "42\n")
			require.Regexp(t, `SSL connection \(protocol: TLSv1\.[23], cipher: `, string(out))
		})
	}
	t.Run("psql without TLS", func(t *testing.T) {
		cmd := exec.Command(psql, "-X", "-A", "-t", "-d", d.DSN("app", "app-secret", "appdb"), "-c", "SELECT 1")
		out, err := cmd.CombinedOutput()
		require.Error(t, err)
		require.Contains(t, string(out), "SSL required")
	})
	t.Run("psycopg verify-full", func(t *testing.T) {
		py := pythonWithPsycopg(t)
		script := `import psycopg, sys
c = psycopg.connect(sys.argv[1])
print(c.pgconn.ssl_in_use, c.execute("SELECT 6 * 7").fetchone()[0])`
		dsn := tlDSN(d, e, "app", "app-secret", "appdb", "verify-full", "channel_binding=require")
		dsn = strings.Replace(dsn, "host=127.0.0.1", "host=localhost hostaddr=127.0.0.1", 1)
		out, err := exec.Command(py, "-c", script, dsn).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "True 42\n", string(out))
	})
}

// TestTLSHBA: hostssl and hostnossl rules match the real state of the
// connection, for pools and for the admin console.
func TestTLSHBA(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "allow", `  pg_hba: |
    hostssl all app 127.0.0.1/32 scram-sha-256
    hostnossl appdb plain 127.0.0.1/32 trust
    hostssl pgdoorman admin 127.0.0.1/32 scram-sha-256
    local all all trust`)
	tests := []struct {
		name   string
		dsn    string
		errSub string
	}{
		{"hostssl over TLS", tlDSN(d, e, "app", "app-secret", "appdb", "require"), ""},
		{"hostssl in plaintext", d.DSN("app", "app-secret", "appdb"),
			`no pg_hba.conf entry for host "127.0.0.1", user "app", database "appdb", no encryption (SQLSTATE 28000)`},
		{"hostnossl in plaintext", d.DSN("plain", "anything", "appdb"), ""},
		{"hostnossl over TLS", tlDSN(d, e, "plain", "anything", "appdb", "require"),
			`no pg_hba.conf entry for host "127.0.0.1", user "plain", database "appdb", SSL encryption (SQLSTATE 28000)`},
		{"admin console over TLS", tlDSN(d, e, "admin", "admin-secret", "pgdoorman", "require"), ""},
		{"admin console in plaintext", d.DSN("admin", "admin-secret", "pgdoorman"), `database "pgdoorman", no encryption (SQLSTATE 28000)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			cfg, err := pgx.ParseConfig(tt.dsn)
			require.NoError(t, err)
			cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // the console speaks simple protocol
			c, err := pgx.ConnectConfig(ctx, cfg)
			if tt.errSub != "" {
				require.ErrorContains(t, err, tt.errSub)
				return
			}
			require.NoError(t, err)
			defer c.Close(ctx)
			_, err = c.Exec(ctx, "SHOW VERSION")
			if !strings.Contains(tt.dsn, "pgdoorman") {
				_, err = c.Exec(ctx, "SELECT 1")
			}
			require.NoError(t, err)
		})
	}
	require.GreaterOrEqual(t, tlMetric(t, d, "pg_doorman_client_login_failures_total", "reason", "hba"), 3.0)
}

// tlPeerSerial is the serial of the certificate pg_doorman showed c.
func tlPeerSerial(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	tc, ok := c.PgConn().Conn().(*tls.Conn)
	require.True(t, ok, "connection is TLS")
	return tc.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestTLSCertificateRotation: SIGHUP (Reload) loads a new certificate for
// new handshakes while a TLS client stays connected and keeps working; a
// broken key on a later reload keeps the running certificate.
func TestTLSCertificateRotation(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "require", "")
	ctx := context.Background()
	dsn := tlDSN(d, e, "app", "app-secret", "appdb", "verify-full")
	old := connect(t, dsn)
	oldSerial := tlPeerSerial(t, old)

	rotated, err := e.set.CA.Issue("rotated", testcerts.ServerNames...)
	require.NoError(t, err)
	tlInstall(t, e, rotated)
	require.NoError(t, d.Daemon.Reload())
	_, failed := d.Daemon.ReloadStats()
	require.False(t, failed)

	fresh := connect(t, dsn)
	freshSerial := tlPeerSerial(t, fresh)
	require.NotEqual(t, oldSerial, freshSerial, "a new handshake sees the new certificate")
	tc := fresh.PgConn().Conn().(*tls.Conn)
	require.Equal(t, "rotated", tc.ConnectionState().PeerCertificates[0].Subject.CommonName)

	// The client connected before the rotation still works, on the old certificate.
	var n int
	require.NoError(t, old.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n))
	require.Equal(t, oldSerial, tlPeerSerial(t, old))

	// A key that does not match: the reload fails, the certificate stays.
	other, err := e.set.CA.Issue("other", testcerts.ServerNames...)
	require.NoError(t, err)
	b, err := os.ReadFile(other.Key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(e.key, b, 0o600))
	require.Error(t, d.Daemon.Reload())
	_, failed = d.Daemon.ReloadStats()
	require.True(t, failed)
	third := connect(t, dsn)
	require.Equal(t, freshSerial, tlPeerSerial(t, third))
	require.NoError(t, old.QueryRow(ctx, "SELECT 1").Scan(&n))
}

// TestTLSDirect: PostgreSQL 17's sslnegotiation=direct (pgx implements
// it) and a raw ClientHello with ALPN "postgresql" are accepted; a direct
// handshake without ALPN is refused as PostgreSQL 17 refuses it.
func TestTLSDirect(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "require", "")
	require.NoError(t, tlConnect(t, tlDSN(d, e, "app", "app-secret", "appdb", "verify-full", "sslnegotiation=direct")))

	dial := func(protos []string) *pgproto3.Frontend {
		cc := &tls.Config{RootCAs: e.set.CA.Pool(), ServerName: "localhost", NextProtos: protos}
		tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", d.Port), cc)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tc.Close() })
		require.NoError(t, tc.SetDeadline(time.Now().Add(15*time.Second)))
		fe := pgproto3.NewFrontend(tc, tc)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
			Parameters: map[string]string{"user": "app", "database": "appdb"}})
		require.NoError(t, fe.Flush())
		return fe
	}
	msg, err := dial([]string{"postgresql"}).Receive()
	require.NoError(t, err)
	sasl, ok := msg.(*pgproto3.AuthenticationSASL)
	require.True(t, ok, "got %T", msg)
	require.Equal(t, []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}, sasl.AuthMechanisms)

	msg, err = dial(nil).Receive()
	require.NoError(t, err)
	er, ok := msg.(*pgproto3.ErrorResponse)
	require.True(t, ok, "got %T", msg)
	require.Equal(t, "08P01", er.Code)
	require.Equal(t, "received direct SSL connection request without ALPN protocol negotiation extension", er.Message)
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_tls_handshake_failures_total", "reason", "no_alpn"))
}

// TestTLSSCRAMPlus: pgx negotiates SCRAM-SHA-256-PLUS over TLS (and
// requires it with channel_binding=require); plaintext gets SCRAM-SHA-256.
// The session still recovers the ClientKey for passthrough.
func TestTLSSCRAMPlus(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "allow", "")
	require.NoError(t, tlConnect(t, tlDSN(d, e, "app", "app-secret", "appdb", "verify-full", "channel_binding=require")))
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_client_scram_auth_total", "mechanism", "SCRAM-SHA-256-PLUS"))
	require.NoError(t, tlConnect(t, d.DSN("app", "app-secret", "appdb")))
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_client_scram_auth_total", "mechanism", "SCRAM-SHA-256"))
	err := tlConnect(t, tlDSN(d, e, "app", "wrong", "appdb", "require", "channel_binding=require"))
	require.ErrorContains(t, err, "28P01")
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_client_scram_auth_total", "mechanism", "SCRAM-SHA-256-PLUS"))
}

// TestTLSShowClientsAndMetrics: SHOW CLIENTS shows each TLS client's
// protocol/cipher/group as PgBouncer does and nothing for plaintext; the
// handshake counters and connection_count{type="tls"} move.
func TestTLSShowClientsAndMetrics(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "verify-full", "")
	tlsClient := connect(t, tlDSN(d, e, "app", "app-secret", "appdb", "verify-full", tlClientCert(e.client)))
	want := clienttls.ConnInfo(tlsClient.PgConn().Conn().(*tls.Conn).ConnectionState())
	require.Regexp(t, `^TLSv1\.3/TLS_AES_128_GCM_SHA256/ECDH=\S+$`, want)

	// TLS 1.2 through a raw handshake: OpenSSL's suite name.
	msg, err := tlStartupTLS(t, d.Port, &tls.Config{RootCAs: e.set.CA.Pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12,
		CurvePreferences: []tls.CurveID{tls.CurveP256}, GetClientCertificate: tlAlwaysSend(t, e.client)}, "tls12")
	require.NoError(t, err)
	require.IsType(t, &pgproto3.AuthenticationSASL{}, msg)

	admin := tlAdmin(t, tlDSN(d, e, "admin", "admin-secret", "pgdoorman", "verify-full", tlClientCert(e.client)))
	rows, err := admin.Query(context.Background(), "SHOW CLIENTS")
	require.NoError(t, err)
	res, err := pgx.CollectRows(rows, pgx.RowToMap)
	require.NoError(t, err)
	var got []string
	for _, r := range res {
		got = append(got, fmt.Sprintf("%v %v %v", r["database"], r["application_name"], r["tls"]))
	}
	sort.Strings(got)
	adminInfo := clienttls.ConnInfo(admin.PgConn().Conn().(*tls.Conn).ConnectionState())
	require.Equal(t, []string{
		"appdb  " + want,
		"appdb tls12 TLSv1.2/ECDHE-ECDSA-AES128-GCM-SHA256/ECDH=prime256v1",
		"pgdoorman  " + adminInfo,
	}, got)

	// One bad client certificate, one client that is not TLS after 'S',
	// one that goes away after 'S'.
	_, err = tlStartupTLS(t, d.Port, &tls.Config{RootCAs: e.set.CA.Pool(), ServerName: "localhost",
		GetClientCertificate: tlAlwaysSend(t, e.wrongClient)}, "wrong")
	require.Error(t, err)
	_, nc := tlSSLRequest(t, d.Port)
	_, _ = nc.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	_, _ = io.Copy(io.Discard, nc)
	_, nc = tlSSLRequest(t, d.Port)
	_ = nc.Close()
	// Each is counted by its session once its handshake returns, which may
	// be after its client has seen the end.
	require.Eventually(t, func() bool {
		return tlMetric(t, d, "pg_doorman_tls_handshake_failures_total", "reason", "client_closed") == 1 &&
			tlMetric(t, d, "pg_doorman_tls_handshakes_total", "result", "failed") >= 3
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_tls_handshake_failures_total", "reason", "bad_client_certificate"))
	require.Equal(t, 1.0, tlMetric(t, d, "pg_doorman_tls_handshake_failures_total", "reason", "not_tls"))
	require.Equal(t, 3.0, tlMetric(t, d, "pg_doorman_tls_handshakes_total", "result", "failed"))
	require.Equal(t, 3.0, tlMetric(t, d, "pg_doorman_tls_handshakes_total", "result", "ok"))
	require.Equal(t, 3.0, tlMetric(t, d, "pg_doorman_connection_count", "type", "tls"))
}

// TestTLSRateLimit: with tls_rate_limit_per_second 5, ten clients asking
// at once get their 'S' (the handshake slot) one after the other, 200 ms
// apart: the last at least 1.8 s after the first. Only a lower bound on
// time is asserted.
func TestTLSRateLimit(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "allow", "  tls_rate_limit_per_second: 5\n")
	const clients = 10
	var (
		mu    sync.Mutex
		times []time.Time
		wg    sync.WaitGroup
	)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port), 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := nc.Write([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}); err != nil {
				t.Error(err)
				return
			}
			var b [1]byte
			if _, err := io.ReadFull(nc, b[:]); err != nil || b[0] != 'S' {
				t.Errorf("answer %q, %v", b[0], err)
				return
			}
			mu.Lock()
			times = append(times, time.Now())
			mu.Unlock()
			tc := tls.Client(nc, &tls.Config{RootCAs: e.set.CA.Pool(), ServerName: "localhost"})
			fe := pgproto3.NewFrontend(tc, tc)
			fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
				Parameters: map[string]string{"user": "app", "database": "appdb"}})
			if err := fe.Flush(); err != nil {
				t.Error(err)
				return
			}
			if _, err := fe.Receive(); err != nil { // the server has finished its handshake
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, times, clients)
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	spread := times[clients-1].Sub(times[0])
	t.Logf("10 handshake slots spread over %v", spread)
	require.GreaterOrEqual(t, spread, 1700*time.Millisecond, "9 intervals of 200 ms (less scheduling slack)")
	require.Equal(t, float64(clients), tlMetric(t, d, "pg_doorman_tls_handshakes_total", "result", "ok"))
	require.NoError(t, tlConnect(t, d.DSN("app", "app-secret", "appdb")))
}

// TestTLSStartupViolations: bytes sent before the 'S' are refused in
// plaintext after it, as PostgreSQL does; inside TLS a second SSLRequest
// or a GSSENCRequest is read as an unsupported protocol version, as
// PostgreSQL does once TLS is up.
func TestTLSStartupViolations(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "require", "")

	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port), 5*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(15*time.Second)))
	_, err = nc.Write(append([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}, 0x16, 3, 1, 0, 5, 1, 0, 0, 1, 0))
	require.NoError(t, err)
	rest, err := io.ReadAll(nc)
	require.NoError(t, err)
	require.Equal(t, byte('S'), rest[0])
	require.Equal(t, byte('E'), rest[1], "a plaintext ErrorResponse after the S")
	require.Contains(t, string(rest), "received unencrypted data after SSL request")

	for name, code := range map[string][]byte{
		"SSLRequest":    {0x04, 0xd2, 0x16, 0x2f},
		"GSSENCRequest": {0x04, 0xd2, 0x16, 0x30},
	} {
		t.Run(name+" inside TLS", func(t *testing.T) {
			answer, nc := tlSSLRequest(t, d.Port)
			require.Equal(t, byte('S'), answer)
			tc := tls.Client(nc, &tls.Config{RootCAs: e.set.CA.Pool(), ServerName: "localhost"})
			_, err := tc.Write(append([]byte{0, 0, 0, 8}, code...))
			require.NoError(t, err)
			msg, err := pgproto3.NewFrontend(tc, tc).Receive()
			require.NoError(t, err)
			er, ok := msg.(*pgproto3.ErrorResponse)
			require.True(t, ok, "got %T", msg)
			require.Equal(t, "0A000", er.Code)
			require.Contains(t, er.Message, fmt.Sprintf("unsupported frontend protocol 1234.%d", int(code[2])<<8|int(code[3])))
		})
	}
}

// BenchmarkTLSConnect: connect, log in (SCRAM) and close through
// pg_doorman, in plaintext and over TLS (verify-full with host name check,
// SCRAM-SHA-256-PLUS), one client at a time.
func BenchmarkTLSConnect(b *testing.B) {
	e := tlCerts(b)
	d := apptest.Start(b, poolConfig(b, tlGeneral(e, "allow"), "transaction", 2))
	for _, bc := range []struct{ name, dsn string }{
		{"plain", d.DSN("app", "app-secret", "appdb")},
		{"tls", tlDSN(d, e, "app", "app-secret", "appdb", "verify-full")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg, err := pgx.ParseConfig(bc.dsn)
			require.NoError(b, err)
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				c, err := pgx.ConnectConfig(ctx, cfg)
				require.NoError(b, err)
				require.NoError(b, c.Close(ctx))
			}
		})
	}
}

// TestTLSCAOutsideVerifyFull: tls_ca_cert with require takes effect as
// PostgreSQL's ssl_ca_file does: no certificate is fine, one that is sent
// must verify.
func TestTLSCAOutsideVerifyFull(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "require", fmt.Sprintf("  tls_ca_cert: %q\n", e.set.CA.Cert))
	require.NoError(t, tlConnect(t, tlDSN(d, e, "app", "app-secret", "appdb", "verify-full")))
	require.NoError(t, tlConnect(t, tlDSN(d, e, "app", "app-secret", "appdb", "verify-full", tlClientCert(e.client))))
	_, err := tlStartupTLS(t, d.Port, &tls.Config{RootCAs: e.set.CA.Pool(), ServerName: "localhost",
		GetClientCertificate: tlAlwaysSend(t, e.wrongClient)}, "wrong")
	require.ErrorContains(t, err, "unknown certificate authority")
}

// TestTLSHandshakeStallCountedOnce: a client that asks for TLS and then
// sends no ClientHello is cut at client_login_timeout and counted once, as
// a TLS failure (tls_handshake_failures_total{timeout}, login failure
// "tls"), not also as a login timeout.
func TestTLSHandshakeStallCountedOnce(t *testing.T) {
	e := tlCerts(t)
	d := tlStart(t, e, "require", "  client_login_timeout: 400ms\n")
	answer, nc := tlSSLRequest(t, d.Port)
	require.Equal(t, byte('S'), answer)
	_, err := io.ReadAll(nc) // the handshake waits for a ClientHello that never comes
	require.NoError(t, err, "closed by pg_doorman, not by the test's own deadline")
	require.Eventually(t, func() bool {
		return counterValue(t, d, "pg_doorman_tls_handshake_failures_total", "reason", "timeout") == 1
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, counterValue(t, d, "pg_doorman_client_login_failures_total", "reason", "tls"))
	require.Zero(t, counterValue(t, d, "pg_doorman_client_login_failures_total", "reason", "timeout"))
}
