package clienttls

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

func certs(t *testing.T) *testcerts.Set {
	t.Helper()
	set, err := testcerts.New(t.TempDir())
	require.NoError(t, err)
	return set
}

func TestLoad(t *testing.T) {
	set := certs(t)
	notPEM := filepath.Join(set.Dir, "empty.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))
	tests := []struct {
		name   string
		files  Files
		verify bool
		auth   tls.ClientAuthType
		errSub string
	}{
		{name: "pair", files: Files{Cert: set.Server.Cert, Key: set.Server.Key}},
		{name: "pair and CA, verify", files: Files{Cert: set.Server.Cert, Key: set.Server.Key, CA: set.CA.Cert}, verify: true, auth: tls.RequireAndVerifyClientCert},
		{name: "pair and CA", files: Files{Cert: set.Server.Cert, Key: set.Server.Key, CA: set.CA.Cert}, auth: tls.VerifyClientCertIfGiven},
		{name: "key of another certificate", files: Files{Cert: set.Server.Cert, Key: set.CA.Key}, errSub: "private key does not match public key"},
		{name: "missing certificate", files: Files{Cert: filepath.Join(set.Dir, "nope.crt"), Key: set.Server.Key}, errSub: "nope.crt"},
		{name: "no key", files: Files{Cert: set.Server.Cert}, errSub: "both required"},
		{name: "CA file missing", files: Files{Cert: set.Server.Cert, Key: set.Server.Key, CA: filepath.Join(set.Dir, "nope.pem")}, errSub: "read tls_ca_cert"},
		{name: "CA file without certificates", files: Files{Cert: set.Server.Cert, Key: set.Server.Key, CA: notPEM}, errSub: "no PEM certificate"},
		{name: "verify without CA", files: Files{Cert: set.Server.Cert, Key: set.Server.Key}, verify: true, errSub: "needs tls_ca_cert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Load(tt.files, tt.verify)
			if tt.errSub != "" {
				require.ErrorContains(t, err, tt.errSub)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "server", m.Leaf.Subject.CommonName)
			require.Equal(t, uint16(tls.VersionTLS12), m.Config().MinVersion)
			require.Equal(t, tt.auth, m.Config().ClientAuth)
		})
	}
}

func TestEndPointHash(t *testing.T) {
	set := certs(t)
	m, err := Load(Files{Cert: set.Server.Cert, Key: set.Server.Key}, false)
	require.NoError(t, err)
	// testcerts signs with ECDSA-SHA256: the hash is SHA-256 of the DER.
	sum := sha256.Sum256(m.Leaf.Raw)
	require.Equal(t, sum[:], m.EndPoint)
}

// handshake runs a client against s over a pipe and returns both states.
func handshake(t *testing.T, s *Server, cc *tls.Config) (srv, cli tls.ConnectionState, srvErr, cliErr error) {
	t.Helper()
	// Loopback TCP rather than net.Pipe: a refusing server's alert must
	// not block on a client that has finished its half.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer b.Close()
	a, err := ln.Accept()
	require.NoError(t, err)
	defer a.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := tls.Client(b, cc)
		cliErr = c.Handshake()
		cli = c.ConnectionState()
		if cliErr != nil {
			_ = b.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tc, _, err := s.Handshake(ctx, a)
	srvErr = err
	if err != nil {
		_ = a.Close()
	} else {
		srv = tc.ConnectionState()
	}
	<-done
	return srv, cli, srvErr, cliErr
}

func TestServerHandshakeAndReload(t *testing.T) {
	set := certs(t)
	s, err := NewServer(ModeVerifyFull, Files{Cert: set.Server.Cert, Key: set.Server.Key, CA: set.CA.Cert}, 0)
	require.NoError(t, err)
	require.True(t, s.Required())
	client, err := set.CA.Issue("alice")
	require.NoError(t, err)
	pair, err := client.TLS()
	require.NoError(t, err)
	cc := &tls.Config{RootCAs: set.CA.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{pair}}

	st, cst, srvErr, cliErr := handshake(t, s, cc)
	require.NoError(t, srvErr)
	require.NoError(t, cliErr)
	require.Equal(t, "alice", st.PeerCertificates[0].Subject.CommonName)
	require.Equal(t, "TLSv1.3/TLS_AES_128_GCM_SHA256/ECDH=X25519MLKEM768", ConnInfo(st))
	first := cst.PeerCertificates[0].SerialNumber

	// TLS 1.2 and a classic group: the OpenSSL names.
	cc12 := cc.Clone()
	cc12.MaxVersion = tls.VersionTLS12
	cc12.CurvePreferences = []tls.CurveID{tls.CurveP256}
	st, _, srvErr, _ = handshake(t, s, cc12)
	require.NoError(t, srvErr)
	require.Equal(t, "TLSv1.2/ECDHE-ECDSA-AES128-GCM-SHA256/ECDH=prime256v1", ConnInfo(st))

	// No client certificate, then one from the wrong CA: refused.
	_, _, srvErr, _ = handshake(t, s, &tls.Config{RootCAs: set.CA.Pool(), ServerName: "localhost"})
	require.Error(t, srvErr)
	wrong, err := set.WrongCA.Issue("mallory")
	require.NoError(t, err)
	wp, err := wrong.TLS()
	require.NoError(t, err)
	_, _, srvErr, _ = handshake(t, s, &tls.Config{RootCAs: set.CA.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{wp}})
	require.ErrorContains(t, srvErr, "certificate")

	// Reload with a new certificate: the next handshake sees it.
	next, err := set.CA.Issue("server2", testcerts.ServerNames...)
	require.NoError(t, err)
	_, err = s.Reload(Files{Cert: next.Cert, Key: set.Server.Key, CA: set.CA.Cert})
	require.Error(t, err, "a key that does not match is refused")
	m, err := s.Reload(Files{Cert: next.Cert, Key: next.Key, CA: set.CA.Cert})
	require.NoError(t, err)
	require.Same(t, m, s.Material())
	_, cst, srvErr, _ = handshake(t, s, cc)
	require.NoError(t, srvErr)
	require.Equal(t, "server2", cst.PeerCertificates[0].Subject.CommonName)
	require.NotEqual(t, first, cst.PeerCertificates[0].SerialNumber)
}

func TestNewServerModes(t *testing.T) {
	set := certs(t)
	pair := Files{Cert: set.Server.Cert, Key: set.Server.Key}
	tests := []struct {
		mode     string
		files    Files
		enabled  bool
		required bool
		errSub   string
	}{
		{mode: ModeDisable, files: pair},
		{mode: ModeAllow},
		{mode: ModeAllow, files: pair, enabled: true},
		{mode: ModeRequire, files: pair, enabled: true, required: true},
		{mode: ModeRequire, errSub: "needs tls_certificate"},
		{mode: ModeVerifyFull, files: pair, errSub: "needs tls_ca_cert"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			s, err := NewServer(tt.mode, tt.files, 0)
			if tt.errSub != "" {
				require.ErrorContains(t, err, tt.errSub)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.enabled, s.Enabled())
			require.Equal(t, tt.required, s.Required())
		})
	}
}

func TestLimiterReserve(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(4, func() time.Time { return now })
	// Four clients at once: 0, 250, 500, 750 ms.
	for i, want := range []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond} {
		require.Equal(t, want, l.reserve(), "client %d", i)
	}
	// After a quiet second the queue is empty again: no burst saved up.
	now = now.Add(2 * time.Second)
	require.Equal(t, time.Duration(0), l.reserve())
	require.Equal(t, 250*time.Millisecond, l.reserve())
}

func TestLimiterWaitDeadline(t *testing.T) {
	now := time.Now()
	l := NewLimiter(1, func() time.Time { return now })
	require.NoError(t, l.Wait(context.Background()))
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(500*time.Millisecond))
	defer cancel()
	require.ErrorIs(t, l.Wait(ctx), ErrQueueTimeout, "the slot is 1 s away, the deadline 0.5 s")
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	require.ErrorIs(t, l.Wait(ctx2), context.Canceled)
}

func TestFailureReason(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"deadline", fmt.Errorf("tls handshake: %w", context.DeadlineExceeded), "timeout"},
		{"socket timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, "timeout"},
		{"plaintext after S", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, "not_tls"},
		{"wrong CA", &tls.CertificateVerificationError{Err: errors.New("x509: unknown authority")}, "bad_client_certificate"},
		{"EOF", fmt.Errorf("tls handshake: %w", io.EOF), "client_closed"},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, "client_closed"},
		{"no certificate", errors.New("tls: client didn't provide a certificate"), "no_client_certificate"},
		{"old client", errors.New("tls: client offered only unsupported versions: [301]"), "protocol_version"},
		{"version alert", errors.New("tls: unsupported protocol version"), "protocol_version"},
		{"ciphers", errors.New("tls: no cipher suite supported by both client and server"), "no_shared_cipher"},
		{"alpn", errors.New("tls: client requested unsupported application protocols ([h2])"), "alpn"},
		{"client alert", errors.New("remote error: tls: bad certificate"), "client_alert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, FailureReason(tt.err))
		})
	}
}

// TestHandshakeReasonsFromCryptoTLS: the reasons of real failed
// handshakes, so that a change in crypto/tls's errors shows here.
func TestHandshakeReasonsFromCryptoTLS(t *testing.T) {
	set := certs(t)
	s, err := NewServer(ModeRequire, Files{Cert: set.Server.Cert, Key: set.Server.Key}, 0)
	require.NoError(t, err)
	_, _, srvErr, _ := handshake(t, s, &tls.Config{RootCAs: set.CA.Pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS11, MinVersion: tls.VersionTLS10})
	require.Equal(t, "protocol_version", FailureReason(srvErr), "%v", srvErr)
	_, _, srvErr, _ = handshake(t, s, &tls.Config{RootCAs: set.CA.Pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}})
	require.Equal(t, "no_shared_cipher", FailureReason(srvErr), "%v", srvErr)
	_, _, srvErr, _ = handshake(t, s, &tls.Config{RootCAs: set.CA.Pool(), ServerName: "localhost", NextProtos: []string{"h2"}})
	require.Equal(t, "alpn", FailureReason(srvErr), "%v", srvErr)
	_, _, srvErr, _ = handshake(t, s, &tls.Config{RootCAs: set.CA.Pool(), ServerName: "wrong.example"})
	require.Equal(t, "client_alert", FailureReason(srvErr), "%v", srvErr)
}
