package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Files are the server_tls_* settings.
type Files struct {
	Mode        string // server_tls_mode
	CACert      string // server_tls_ca_cert: PEM bundle, "" = none
	Certificate string // server_tls_certificate, "" = no client certificate
	PrivateKey  string // server_tls_private_key
}

// Material is loaded server-side TLS material. It is immutable.
type Material struct {
	Mode  Mode
	Files Files
	// roots is the CA bundle; nil without server_tls_ca_cert.
	roots *x509.CertPool
	// RootCount is the number of certificates in the bundle.
	RootCount int
	// cert is the client certificate for mTLS; nil without one.
	cert *tls.Certificate
}

// SettingError is a problem with one server_tls_* setting.
type SettingError struct {
	Setting string // e.g. "server_tls_ca_cert"
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Load parses the mode and reads the files. The error joins one
// *SettingError per bad setting.
func Load(f Files) (*Material, error) {
	mode, err := ParseMode(f.Mode)
	if err != nil {
		return nil, &SettingError{"server_tls_mode", err}
	}
	m := &Material{Mode: mode, Files: f}
	var errs []error
	if f.CACert != "" {
		m.roots, m.RootCount, err = loadBundle(f.CACert)
		if err != nil {
			errs = append(errs, &SettingError{"server_tls_ca_cert", err})
		}
	} else if mode >= VerifyCA {
		errs = append(errs, &SettingError{"server_tls_ca_cert", fmt.Errorf("required when server_tls_mode is %s", mode)})
	}
	switch {
	case (f.Certificate == "") != (f.PrivateKey == ""):
		errs = append(errs, &SettingError{"server_tls_certificate", errors.New("server_tls_certificate and server_tls_private_key must be set together")})
	case f.Certificate != "":
		c, err := tls.LoadX509KeyPair(f.Certificate, f.PrivateKey)
		if err != nil {
			errs = append(errs, &SettingError{"server_tls_certificate", err})
		} else {
			m.cert = &c
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// FromMode is Material without files, for configurations built in code.
// It equals what Load returns for the mode without files.
func FromMode(mode Mode) *Material { return &Material{Mode: mode, Files: Files{Mode: mode.String()}} }

// HasClientCertificate reports whether mTLS material is loaded.
func (m *Material) HasClientCertificate() bool { return m.cert != nil }

// loadBundle reads every CERTIFICATE block of a PEM file.
func loadBundle(path string) (*x509.CertPool, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	pool := x509.NewCertPool()
	n := 0
	for len(b) > 0 {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: certificate %d: %w", path, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("%s: no PEM certificate found", path)
	}
	return pool, n, nil
}
