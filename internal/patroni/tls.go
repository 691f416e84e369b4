package patroni

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSConfig configures HTTPS towards the Patroni REST API. The files are
// read once by NewClient; rotate them by building a new Client.
type TLSConfig struct {
	CACert     string // PEM file with the CA(s) that signed Patroni's certificate; "" = system roots
	ClientCert string // PEM client certificate, for restapi.verify_client; needs ClientKey
	ClientKey  string // PEM private key of ClientCert
	SkipVerify bool   // do not verify the server certificate (testing only)
}

// build turns the file names into a *tls.Config.
func (t *TLSConfig) build() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.SkipVerify} //nolint:gosec // opt-in
	if t.CACert != "" {
		pem, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("read ca cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca cert %s: no PEM certificate found", t.CACert)
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.ClientCert != "" && t.ClientKey != "":
		pair, err := tls.LoadX509KeyPair(t.ClientCert, t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("load client cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case t.ClientCert != "" || t.ClientKey != "":
		return nil, errors.New("client cert and client key must be given together")
	}
	return cfg, nil
}
