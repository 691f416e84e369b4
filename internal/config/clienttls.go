package config

import (
	"errors"

	"github.com/doorman-go/doorman/internal/clienttls"
)

// ClientTLSFiles are the client-side TLS files of g.
func (g *General) ClientTLSFiles() clienttls.Files {
	return clienttls.Files{Cert: g.TLSCertificate, Key: g.TLSPrivateKey, CA: g.TLSCACert}
}

// checkClientTLSFiles loads the client-side certificate, key and CA once
// at load time: a key that does not match, a missing file or a CA bundle
// without certificates fails the load (and pg_doorman -t) instead of
// every client's handshake. When the pair is set only partly, validateTLS
// has said so already.
func (d *decoder) checkClientTLSFiles(g *General) {
	if g.TLSCertificate == "" || g.TLSPrivateKey == "" || g.TLSMode == "verify-full" && g.TLSCACert == "" {
		return
	}
	if _, err := clienttls.Load(g.ClientTLSFiles(), g.TLSMode == "verify-full"); err != nil {
		key := "general.tls_certificate"
		if errors.Is(err, clienttls.ErrCA) {
			key = "general.tls_ca_cert"
		}
		d.fail(key, err)
	}
}
