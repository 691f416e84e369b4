package auth

import (
	"crypto/md5" //nolint:gosec // PostgreSQL's md5 auth method is defined with MD5.
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

const (
	md5Prefix      = "md5"
	md5VerifierLen = len(md5Prefix) + 2*md5.Size
)

// MD5Verifier returns the hash PostgreSQL stores in pg_authid for a user
// whose password was set with password_encryption = md5:
// "md5" + hex(md5(password + user)).
func MD5Verifier(user, password string) string {
	return md5Hex(password, user)
}

// MD5Response returns what a client sends in its PasswordMessage when
// challenged with AuthenticationMD5Password(salt): "md5" + hex(md5(hex part
// of the verifier + salt)). Knowing the stored verifier is enough, which is
// how the pooler logs in to PostgreSQL with only the hash in its config.
func MD5Response(verifier string, salt [4]byte) string {
	return md5Hex(strings.TrimPrefix(verifier, md5Prefix), string(salt[:]))
}

// CheckMD5 reports whether response is the correct answer to the salt for
// the stored verifier. The comparison is constant-time; a verifier that is
// not an MD5 hash never matches.
func CheckMD5(verifier string, salt [4]byte, response string) bool {
	if !IsMD5Verifier(verifier) {
		return false
	}
	want := MD5Response(verifier, salt)
	return subtle.ConstantTimeCompare([]byte(want), []byte(response)) == 1
}

// IsMD5Verifier reports whether s looks like an MD5 hash from pg_authid:
// "md5" followed by 32 lower-case hex digits (PostgreSQL's own test).
func IsMD5Verifier(s string) bool {
	if len(s) != md5VerifierLen || !strings.HasPrefix(s, md5Prefix) {
		return false
	}
	for _, c := range s[len(md5Prefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func md5Hex(a, b string) string {
	h := md5.New() //nolint:gosec // see import.
	h.Write([]byte(a))
	h.Write([]byte(b))
	return md5Prefix + hex.EncodeToString(h.Sum(nil))
}
