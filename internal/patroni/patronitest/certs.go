package patronitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a throw-away certificate authority for tests.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
	serial  int64
}

// NewCA creates a self-signed CA valid for one day.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("create ca: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("parse ca: %v", err)
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key, serial: 1}
}

// Pool returns a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// IssueServer issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) IssueServer(tb testing.TB) tls.Certificate {
	tb.Helper()
	return ca.issue(tb, "127.0.0.1", x509.ExtKeyUsageServerAuth)
}

// IssueClient issues a client certificate with common name cn.
func (ca *CA) IssueClient(tb testing.TB, cn string) tls.Certificate {
	tb.Helper()
	return ca.issue(tb, cn, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(tb testing.TB, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	key := newKey(tb)
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatalf("issue %s: %v", cn, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatalf("marshal key: %v", err)
	}
	pair, err := tls.X509KeyPair(pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER))
	if err != nil {
		tb.Fatalf("key pair: %v", err)
	}
	return pair
}

// WriteCert writes pair as PEM files <prefix>.crt and <prefix>.key under dir
// and returns their paths.
func WriteCert(tb testing.TB, dir, prefix string, pair tls.Certificate) (certFile, keyFile string) {
	tb.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(pair.PrivateKey)
	if err != nil {
		tb.Fatalf("marshal key: %v", err)
	}
	certFile = filepath.Join(dir, prefix+".crt")
	keyFile = filepath.Join(dir, prefix+".key")
	WriteFile(tb, certFile, pemBlock("CERTIFICATE", pair.Certificate[0]))
	WriteFile(tb, keyFile, pemBlock("PRIVATE KEY", keyDER))
	return certFile, keyFile
}

// WriteFile writes data to path with mode 0600.
func WriteFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatalf("write %s: %v", path, err)
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("generate key: %v", err)
	}
	return key
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// MutualTLS is the set-up of an HTTPS fake that asks for a client
// certificate, and the files a client is given: the server's CA, a CA that
// signed nothing the server trusts, and a client certificate it trusts.
type MutualTLS struct {
	Server            *tls.Config // for NewTLSServer
	CAFile, OtherCA   string      // PEM files: the server's CA; an unrelated one
	CertFile, KeyFile string      // a client certificate of the trusted client CA
	Other             *CA         // the unrelated CA, to issue strangers' certificates
}

// NewMutualTLS makes the CAs and writes the client's files into dir.
func NewMutualTLS(tb testing.TB, dir, clientName string) MutualTLS {
	tb.Helper()
	serverCA := NewCA(tb, "server ca")
	clientCA := NewCA(tb, "client ca")
	other := NewCA(tb, "other ca")
	m := MutualTLS{CAFile: filepath.Join(dir, "ca.pem"), OtherCA: filepath.Join(dir, "other.pem"), Other: other}
	WriteFile(tb, m.CAFile, serverCA.CertPEM)
	WriteFile(tb, m.OtherCA, other.CertPEM)
	m.CertFile, m.KeyFile = WriteCert(tb, dir, "client", clientCA.IssueClient(tb, clientName))
	m.Server = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{serverCA.IssueServer(tb)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCA.Pool(),
	}
	return m
}
