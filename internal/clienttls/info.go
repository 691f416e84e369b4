package clienttls

import (
	"crypto/tls"
	"strings"
)

// ConnInfo renders a connection's TLS state as PgBouncer's SHOW CLIENTS
// tls column does (libusual tls_get_connection_info): protocol/cipher and,
// for an ECDHE key exchange, /ECDH=<group>, with OpenSSL's names, e.g.
// "TLSv1.3/TLS_AES_128_GCM_SHA256/ECDH=X25519" or
// "TLSv1.2/ECDHE-ECDSA-AES128-GCM-SHA256/ECDH=prime256v1".
func ConnInfo(cs tls.ConnectionState) string {
	var b strings.Builder
	b.WriteString(versionName(cs.Version))
	b.WriteByte('/')
	b.WriteString(cipherName(cs.CipherSuite))
	if g := groupName(cs.CurveID); g != "" {
		b.WriteString("/ECDH=")
		b.WriteString(g)
	}
	return b.String()
}

func versionName(v uint16) string {
	switch v {
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS13:
		return "TLSv1.3"
	}
	return tls.VersionName(v)
}

// openSSLCiphers are OpenSSL's names of the suites Server negotiates;
// TLS 1.3 suites have the same name in both.
var openSSLCiphers = map[uint16]string{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:       "ECDHE-ECDSA-AES128-GCM-SHA256",
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256:         "ECDHE-RSA-AES128-GCM-SHA256",
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:       "ECDHE-ECDSA-AES256-GCM-SHA384",
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384:         "ECDHE-RSA-AES256-GCM-SHA384",
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:   "ECDHE-RSA-CHACHA20-POLY1305",
}

func cipherName(id uint16) string {
	if n, ok := openSSLCiphers[id]; ok {
		return n
	}
	return tls.CipherSuiteName(id)
}

// groupName is OpenSSL's short name of a key exchange group (OBJ_nid2sn),
// "" when none was recorded.
func groupName(id tls.CurveID) string {
	switch id {
	case 0:
		return ""
	case tls.X25519:
		return "X25519"
	case tls.CurveP256:
		return "prime256v1"
	case tls.CurveP384:
		return "secp384r1"
	case tls.CurveP521:
		return "secp521r1"
	}
	return id.String()
}
