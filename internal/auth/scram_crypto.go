package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// SCRAMMechanism is the SASL mechanism name sent in AuthenticationSASL and
// expected in SASLInitialResponse.
const SCRAMMechanism = "SCRAM-SHA-256"

// SCRAMPlusMechanism is SCRAM-SHA-256 with channel binding, offered to
// clients on TLS; ChannelBindingType is the only binding PostgreSQL
// implements (RFC 5929 tls-server-end-point).
const (
	SCRAMPlusMechanism = "SCRAM-SHA-256-PLUS"
	ChannelBindingType = "tls-server-end-point"
)

// MaxSCRAMIterations caps the iteration count the client side accepts from a
// server (and NewSCRAMVerifier's input): PBKDF2 at 2^20 rounds already costs
// about half a second of CPU, and a hostile or misconfigured backend must
// not be able to pin a core per connection attempt. PostgreSQL's default is
// 4096.
const MaxSCRAMIterations = 1 << 20

// scramKeyLen is the SHA-256 output size, the length of every SCRAM key.
const scramKeyLen = sha256.Size

func hmacSHA256(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// saltedPassword is Hi(Normalize(password), salt, i) from RFC 5802.
func saltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	sp, err := pbkdf2.Key(sha256.New, saslPrep(password), salt, iterations, scramKeyLen)
	if err != nil {
		return nil, fmt.Errorf("pbkdf2: %w", err)
	}
	return sp, nil
}

// keysFromPassword derives ClientKey and ServerKey.
func keysFromPassword(password string, salt []byte, iterations int) (clientKey, serverKey []byte, err error) {
	sp, err := saltedPassword(password, salt, iterations)
	if err != nil {
		return nil, nil, err
	}
	return hmacSHA256(sp, "Client Key"), hmacSHA256(sp, "Server Key"), nil
}

func xorBytes(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out
}

var b64 = base64.StdEncoding

// decodeB64 is strict standard base64: unlike base64.StdEncoding alone it
// also rejects embedded CR/LF, which PostgreSQL's decoder does not skip.
func decodeB64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("invalid base64 %q", s)
	}
	b, err := b64.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("invalid base64 %q: %w", s, err)
	}
	return b, nil
}
