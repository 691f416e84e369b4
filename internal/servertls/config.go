package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// Config is the tls.Config of one connection to host (server_host or a
// fallback member's address), following libpq:
//
//	allow, prefer, require  no verification, unless a CA bundle is given:
//	                        then require (and allow/prefer once TLS is
//	                        used) verify the chain as verify-ca does, as
//	                        libpq does when a root certificate exists
//	verify-ca               the chain must lead to server_tls_ca_cert
//	verify-full             the chain, and host must match the
//	                        certificate's DNS or IP subject alternative
//	                        names (Go does not fall back to the CN)
//
// The client certificate, when configured, is sent whenever the server
// asks for one, as libpq sends sslcert.
func (m *Material) Config(host string) *tls.Config {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is ours (below): crypto/tls can only do verify-full.
		InsecureSkipVerify: true,
	}
	if ip := net.ParseIP(host); ip == nil {
		c.ServerName = host // SNI, as libpq's sslsni=1 does for names
	}
	if m.cert != nil {
		cert := m.cert
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	if m.roots == nil && m.Mode < VerifyCA {
		return c
	}
	roots, full := m.roots, m.Mode == VerifyFull
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return verify(cs.PeerCertificates, roots, host, full)
	}
	return c
}

func verify(chain []*x509.Certificate, roots *x509.CertPool, host string, full bool) error {
	if len(chain) == 0 {
		return errors.New("server sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: chain, Err: err}
	}
	if full {
		if err := chain[0].VerifyHostname(host); err != nil {
			return &tls.CertificateVerificationError{UnverifiedCertificates: chain, Err: err}
		}
	}
	return nil
}

// Describe renders the version and cipher of a connection as PgBouncer's
// tls column does ("TLSv1.3/TLS_AES_256_GCM_SHA384"); cipher names are
// Go's (IANA) names, which for TLS 1.2 differ from OpenSSL's.
func Describe(cs tls.ConnectionState) string {
	v := fmt.Sprintf("0x%04x", cs.Version)
	switch cs.Version {
	case tls.VersionTLS10:
		v = "TLSv1"
	case tls.VersionTLS11:
		v = "TLSv1.1"
	case tls.VersionTLS12:
		v = "TLSv1.2"
	case tls.VersionTLS13:
		v = "TLSv1.3"
	}
	return v + "/" + tls.CipherSuiteName(cs.CipherSuite)
}

// Failure reasons of a TLS connection attempt, the reason label of
// pg_doorman_server_tls_handshake_errors_total.
const (
	ReasonRefused     = "refused"     // the server answered SSLRequest with 'N'
	ReasonCertificate = "certificate" // the server's chain did not verify
	ReasonHostname    = "hostname"    // verify-full: the name did not match
	ReasonAlert       = "alert"       // the server aborted the handshake (e.g. our client certificate)
	ReasonHandshake   = "handshake"   // any other handshake failure (I/O, protocol, timeout)
)

// Reasons lists every reason, for metrics that start them at zero.
var Reasons = []string{ReasonRefused, ReasonCertificate, ReasonHostname, ReasonAlert, ReasonHandshake}

// Reason classifies a handshake error.
func Reason(err error) string {
	var he x509.HostnameError
	var ve *tls.CertificateVerificationError
	var oe *net.OpError
	switch {
	case errors.As(err, &he):
		return ReasonHostname
	case errors.As(err, &ve):
		return ReasonCertificate
	case errors.As(err, &oe) && oe.Op == "remote error":
		return ReasonAlert // crypto/tls reports a peer's alert so
	}
	return ReasonHandshake
}
