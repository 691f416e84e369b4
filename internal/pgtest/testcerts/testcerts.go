package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Pair is a certificate and its key as PEM files.
type Pair struct {
	Cert, Key string // file paths
}

// TLS loads the pair for crypto/tls.
func (p Pair) TLS() (tls.Certificate, error) { return tls.LoadX509KeyPair(p.Cert, p.Key) }

// Authority is a CA that can sign more certificates.
type Authority struct {
	Pair
	dir  string
	name string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Set is the usual material of a TLS test.
type Set struct {
	Dir     string
	CA      *Authority // signs Server and the client certificates
	WrongCA *Authority // unrelated to CA
	// Server is signed by CA for localhost, 127.0.0.1 and ::1.
	Server Pair
}

// ServerNames are the names Set.Server is valid for.
var ServerNames = []string{"localhost", "127.0.0.1", "::1"}

// New writes a Set into dir.
func New(dir string) (*Set, error) {
	ca, err := NewAuthority(dir, "test-ca")
	if err != nil {
		return nil, err
	}
	wrong, err := NewAuthority(dir, "wrong-ca")
	if err != nil {
		return nil, err
	}
	srv, err := ca.Issue("server", ServerNames...)
	if err != nil {
		return nil, err
	}
	return &Set{Dir: dir, CA: ca, WrongCA: wrong, Server: srv}, nil
}

// NewAuthority makes a self-signed CA named name, files <name>.crt/.key.
func NewAuthority(dir, name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	tmpl := template(name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	a := &Authority{dir: dir, name: name, cert: cert, key: key}
	if a.Pair, err = write(dir, name, der, key); err != nil {
		return nil, err
	}
	return a, nil
}

// Issue signs a certificate with common name cn, files <ca>-<cn>.crt/.key.
// Names that parse as IP addresses become IP SANs, the others DNS SANs;
// with no names it is a client certificate.
func (a *Authority) Issue(cn string, names ...string) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("key for %s: %w", cn, err)
	}
	tmpl := template(cn)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(names) > 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return Pair{}, fmt.Errorf("certificate for %s: %w", cn, err)
	}
	return write(a.dir, a.name+"-"+cn, der, key)
}

// Pool is a CertPool holding only this CA.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.cert)
	return p
}

func template(cn string) *x509.Certificate {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic("BUG: testcerts: no randomness: " + err.Error())
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"doorman-go tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}

func write(dir, base string, der []byte, key *ecdsa.PrivateKey) (Pair, error) {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	p := Pair{Cert: filepath.Join(dir, base+".crt"), Key: filepath.Join(dir, base+".key")}
	if err := os.WriteFile(p.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return Pair{}, fmt.Errorf("write %s: %w", p.Cert, err)
	}
	if err := os.WriteFile(p.Key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return Pair{}, fmt.Errorf("write %s: %w", p.Key, err)
	}
	return p, nil
}
