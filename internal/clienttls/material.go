package clienttls

import (
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ALPN is the application protocol PostgreSQL 17 clients announce.
const ALPN = "postgresql"

// ErrCA is wrapped by Load's errors about the client CA bundle.
var ErrCA = errors.New("tls_ca_cert")

// Files names the PEM files of the client-side TLS material.
type Files struct {
	Cert, Key string // certificate (chain) and private key, both required
	CA        string // client CA bundle; empty means client certificates are not checked
}

// Material is loaded, checked TLS material. It is never modified.
type Material struct {
	Files Files
	// Leaf is the parsed server certificate (first of the chain).
	Leaf *x509.Certificate
	// EndPoint is the tls-server-end-point channel binding data of Leaf.
	EndPoint []byte
	config   *tls.Config
}

// Load reads and checks the files: the key must match the certificate and
// the CA bundle must hold at least one certificate. Errors name the file.
func Load(f Files, verifyClients bool) (*Material, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("tls_certificate and tls_private_key are both required")
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("load %s and %s: %w", f.Cert, f.Key, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parse %s: %w", f.Cert, err)
		}
	}
	m := &Material{Files: f, Leaf: leaf, EndPoint: EndPointHash(leaf)}
	cfg := baseConfig()
	cfg.Certificates = []tls.Certificate{pair}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("read %w: %w", ErrCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w %s: no PEM certificate found", ErrCA, f.CA)
		}
		cfg.ClientCAs = pool
	}
	switch {
	case verifyClients && cfg.ClientCAs == nil:
		return nil, fmt.Errorf("verify-full needs %w", ErrCA)
	case verifyClients:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case cfg.ClientCAs != nil:
		// As PostgreSQL with ssl_ca_file: a certificate is optional, one
		// that is sent must verify.
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	m.config = cfg
	return m, nil
}

// Config is the tls.Config of this material. It must not be modified.
func (m *Material) Config() *tls.Config { return m.config }

// intermediateSuites are the TLS 1.2 suites of Mozilla's "intermediate"
// configuration (guidelines 5.7) that crypto/tls implements, in its order.
var intermediateSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

func baseConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: intermediateSuites,
		NextProtos:   []string{ALPN},
		// Session tickets would let a client resume a session made with
		// a certificate that has since been rotated out; full handshakes
		// keep "new connections see the new certificate" exact.
		SessionTicketsDisabled: true,
	}
}

// EndPointHash is RFC 5929 tls-server-end-point: the certificate hashed
// with the hash of its signature algorithm, SHA-256 when that is MD5 or
// SHA-1. It is nil for a signature without a separate hash (Ed25519), for
// which PostgreSQL has no channel binding either: SCRAM-SHA-256-PLUS is
// then not offered.
func EndPointHash(c *x509.Certificate) []byte {
	var h crypto.Hash
	switch c.SignatureAlgorithm {
	case x509.MD5WithRSA, x509.SHA1WithRSA, x509.ECDSAWithSHA1, x509.DSAWithSHA1,
		x509.SHA256WithRSA, x509.ECDSAWithSHA256, x509.SHA256WithRSAPSS, x509.DSAWithSHA256:
		sum := sha256.Sum256(c.Raw)
		return sum[:]
	case x509.SHA384WithRSA, x509.ECDSAWithSHA384, x509.SHA384WithRSAPSS:
		h = crypto.SHA384
	case x509.SHA512WithRSA, x509.ECDSAWithSHA512, x509.SHA512WithRSAPSS:
		h = crypto.SHA512
	default:
		return nil
	}
	hh := h.New()
	hh.Write(c.Raw)
	return hh.Sum(nil)
}
