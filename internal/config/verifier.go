package config

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// Password verifier prefixes accepted in users[].password.
const (
	MD5Prefix    = "md5"
	SCRAMPrefix  = "SCRAM-SHA-256$"
	JWTKeyPrefix = "jwt-pkey-fpath:"
)

var errVerifierFormat = errors.New("unsupported password format: want md5 followed by 32 hex digits, " +
	"SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (as in pg_authid), or jwt-pkey-fpath:<public key file>")

// CheckVerifier reports whether s is a password verifier pg_doorman can
// authenticate clients against. The error never contains s (it is a
// password equivalent).
func CheckVerifier(s string) error {
	switch {
	case strings.HasPrefix(s, SCRAMPrefix):
		return checkSCRAM(strings.TrimPrefix(s, SCRAMPrefix))
	case strings.HasPrefix(s, MD5Prefix):
		h := strings.TrimPrefix(s, MD5Prefix)
		if _, err := hex.DecodeString(h); err != nil || len(h) != 32 {
			return errors.New("invalid md5 verifier: want md5 followed by 32 hex digits")
		}
		return nil
	case strings.HasPrefix(s, JWTKeyPrefix):
		if strings.TrimSpace(strings.TrimPrefix(s, JWTKeyPrefix)) == "" {
			return errors.New("jwt-pkey-fpath: needs a public key file path")
		}
		return nil
	}
	return errVerifierFormat
}

// checkSCRAM checks "<iter>:<salt>$<StoredKey>:<ServerKey>" (RFC 5803 form
// used by PostgreSQL's pg_authid).
func checkSCRAM(rest string) error {
	bad := errors.New("invalid SCRAM-SHA-256 verifier: want SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>")
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return bad
	}
	iter, salt, ok1 := strings.Cut(params, ":")
	stored, server, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return bad
	}
	if n, err := strconv.Atoi(iter); err != nil || n < 1 {
		return errors.New("invalid SCRAM-SHA-256 verifier: iteration count must be a positive integer")
	}
	if b, err := base64.StdEncoding.DecodeString(salt); err != nil || len(b) == 0 {
		return errors.New("invalid SCRAM-SHA-256 verifier: salt is not base64")
	}
	for _, k := range []string{stored, server} {
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) != 32 {
			return errors.New("invalid SCRAM-SHA-256 verifier: StoredKey and ServerKey must be base64 of 32 bytes")
		}
	}
	return nil
}
