package config

import (
	"errors"
	"slices"

	"github.com/doorman-go/doorman/internal/servertls"
)

// loadServerTLS reads and parses the server_tls_* files, so that a bad
// path, a PEM without a certificate or a key that does not match fail the
// load (and pg_doorman -t) instead of every server connection later. The
// problems validateTLS already reports (mode, pairs, missing CA) are not
// repeated. A reload reads the files again: that is how SIGHUP rotates the
// server-side certificates.
func (d *decoder) loadServerTLS(g *General) {
	g.ServerTLS = nil
	if d.lenient {
		// Decode-only tests: their fixtures name files that do not exist.
		if m, err := servertls.ParseMode(g.ServerTLSMode); err == nil {
			g.ServerTLS = servertls.FromMode(m)
		}
		return
	}
	if !slices.Contains(serverTLSModes, g.ServerTLSMode) ||
		(g.ServerTLSCertificate == "") != (g.ServerTLSPrivateKey == "") ||
		((g.ServerTLSMode == "verify-ca" || g.ServerTLSMode == "verify-full") && g.ServerTLSCACert == "") {
		return
	}
	m, err := servertls.Load(servertls.Files{
		Mode: g.ServerTLSMode, CACert: g.ServerTLSCACert,
		Certificate: g.ServerTLSCertificate, PrivateKey: g.ServerTLSPrivateKey,
	})
	if err != nil {
		for _, e := range unjoin(err) {
			var se *servertls.SettingError
			if errors.As(e, &se) {
				d.fail("general."+se.Setting, se.Err)
			} else {
				d.fail("general.server_tls_mode", e)
			}
		}
		return
	}
	g.ServerTLS = m
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
