package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	plain := Step{Attempt: Plain}
	tests := []struct {
		mode Mode
		unix bool
		want []Step
	}{
		{Disable, false, []Step{plain}},
		{Allow, false, []Step{{Attempt: Plain, RetryOnServerError: true}, {Attempt: TLSOnly}}},
		{Prefer, false, []Step{{Attempt: TLSIfOffered, RetryOnServerError: true, RetryOnHandshake: true}, plain}},
		{Require, false, []Step{{Attempt: TLSOnly}}},
		{VerifyCA, false, []Step{{Attempt: TLSOnly}}},
		{VerifyFull, false, []Step{{Attempt: TLSOnly}}},
		{VerifyFull, true, []Step{plain}},
		{Require, true, []Step{plain}},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			require.Equal(t, tt.want, Plan(tt.mode, tt.unix))
		})
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for i, n := range modeNames {
		m, err := ParseMode(n)
		require.NoError(t, err)
		require.Equal(t, Mode(i), m)
		require.Equal(t, n, m.String())
	}
	_, err := ParseMode("verify_full")
	require.ErrorContains(t, err, `unknown server_tls_mode "verify_full"`)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set, err := testcerts.New(dir)
	require.NoError(t, err)
	client, err := set.CA.Issue("app")
	require.NoError(t, err)
	bundle := filepath.Join(dir, "bundle.pem")
	a, _ := os.ReadFile(set.CA.Cert)
	b, _ := os.ReadFile(set.WrongCA.Cert)
	require.NoError(t, os.WriteFile(bundle, append(append([]byte("# comment\n"), a...), b...), 0o644))
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not pem"), 0o644))

	m, err := Load(Files{Mode: "verify-full", CACert: bundle, Certificate: client.Cert, PrivateKey: client.Key})
	require.NoError(t, err)
	require.Equal(t, VerifyFull, m.Mode)
	require.Equal(t, 2, m.RootCount, "every certificate of the bundle is loaded")
	require.True(t, m.HasClientCertificate())

	tests := []struct {
		name string
		f    Files
		want []string
	}{
		{"bad mode", Files{Mode: "on"}, []string{`server_tls_mode: unknown server_tls_mode "on"`}},
		{"missing ca", Files{Mode: "verify-ca"}, []string{"server_tls_ca_cert: required when server_tls_mode is verify-ca"}},
		{"ca not found", Files{Mode: "require", CACert: filepath.Join(dir, "nope.pem")}, []string{"server_tls_ca_cert: open ", "no such file"}},
		{"ca not pem", Files{Mode: "verify-full", CACert: garbage}, []string{"server_tls_ca_cert: " + garbage + ": no PEM certificate found"}},
		{"cert without key", Files{Mode: "require", Certificate: client.Cert}, []string{"server_tls_certificate: server_tls_certificate and server_tls_private_key must be set together"}},
		{"key of another cert", Files{Mode: "require", Certificate: client.Cert, PrivateKey: set.Server.Key}, []string{"server_tls_certificate: tls: private key does not match public key"}},
		{"both bad", Files{Mode: "verify-ca", CACert: garbage, Certificate: garbage, PrivateKey: garbage}, []string{"server_tls_ca_cert: ", "server_tls_certificate: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.f)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			var se *SettingError
			require.ErrorAs(t, err, &se)
		})
	}
	require.Equal(t, FromMode(Allow), mustLoad(t, Files{Mode: "allow"}), "FromMode equals Load without files")
}

func mustLoad(t *testing.T, f Files) *Material {
	m, err := Load(f)
	require.NoError(t, err)
	return m
}

// TestConfigVerification runs real handshakes against a crypto/tls server
// on 127.0.0.1 for each mode and certificate.
func TestConfigVerification(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set, err := testcerts.New(dir)
	require.NoError(t, err)
	other, err := set.CA.Issue("other", "db.example.invalid")
	require.NoError(t, err)
	wrong, err := set.WrongCA.Issue("wrong", testcerts.ServerNames...)
	require.NoError(t, err)
	client, err := set.CA.Issue("app")
	require.NoError(t, err)

	tests := []struct {
		name   string
		server testcerts.Pair
		f      Files
		host   string
		reason string // "" = handshake succeeds
	}{
		{"require accepts any certificate", wrong, Files{Mode: "require"}, "127.0.0.1", ""},
		{"require with a CA verifies the chain (libpq)", wrong, Files{Mode: "require", CACert: set.CA.Cert}, "127.0.0.1", ReasonCertificate},
		{"prefer without CA accepts anything", other, Files{Mode: "prefer"}, "127.0.0.1", ""},
		{"verify-ca good chain, name ignored", other, Files{Mode: "verify-ca", CACert: set.CA.Cert}, "127.0.0.1", ""},
		{"verify-ca wrong CA", wrong, Files{Mode: "verify-ca", CACert: set.CA.Cert}, "127.0.0.1", ReasonCertificate},
		{"verify-full by IP", set.Server, Files{Mode: "verify-full", CACert: set.CA.Cert}, "127.0.0.1", ""},
		{"verify-full by name", set.Server, Files{Mode: "verify-full", CACert: set.CA.Cert}, "localhost", ""},
		{"verify-full wrong name", other, Files{Mode: "verify-full", CACert: set.CA.Cert}, "127.0.0.1", ReasonHostname},
		{"verify-full wrong CA", wrong, Files{Mode: "verify-full", CACert: set.CA.Cert}, "localhost", ReasonCertificate},
		{"client certificate sent", set.Server, Files{Mode: "verify-full", CACert: set.CA.Cert, Certificate: client.Cert, PrivateKey: client.Key}, "localhost", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mustLoad(t, tt.f)
			peer, err := handshake(t, tt.server, set.CA.Pool(), m.Config(tt.host))
			if tt.reason == "" {
				require.NoError(t, err)
				if m.HasClientCertificate() {
					require.Len(t, peer, 1)
					require.Equal(t, "app", peer[0].Subject.CommonName)
				}
				return
			}
			require.Error(t, err)
			require.Equal(t, tt.reason, Reason(err), "%v", err)
		})
	}
}

// handshake serves cert on a loopback port and dials it with cfg; it
// returns the client certificates the server saw.
func handshake(t *testing.T, cert testcerts.Pair, clientCAs *x509.CertPool, cfg *tls.Config) ([]*x509.Certificate, error) {
	kp, err := cert.TLS()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	seen := make(chan []*x509.Certificate, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			seen <- nil
			return
		}
		defer c.Close()
		sc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{kp}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: clientCAs})
		if sc.Handshake() != nil {
			seen <- nil
			return
		}
		seen <- sc.ConnectionState().PeerCertificates
		_, _ = sc.Write([]byte("x"))
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	tc := tls.Client(nc, cfg)
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	var b [1]byte
	_, err = tc.Read(b[:]) // TLS 1.3: the server's verdict on our certificate
	require.Regexp(t, `^TLSv1\.3/TLS_[A-Z0-9_]+$`, Describe(tc.ConnectionState()))
	return <-seen, err
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	require.Equal(t, "TLSv1.2/TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		Describe(tls.ConnectionState{Version: tls.VersionTLS12, CipherSuite: tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}))
	require.Equal(t, "TLSv1.3/TLS_AES_256_GCM_SHA384",
		Describe(tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_AES_256_GCM_SHA384}))
}
