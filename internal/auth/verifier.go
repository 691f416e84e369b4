package auth

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SCRAMVerifier is a parsed SCRAM-SHA-256 secret as stored in pg_authid.
// Values returned by this package never share slices with their input.
type SCRAMVerifier struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// ParseSCRAMVerifier parses
// "SCRAM-SHA-256$<iterations>:<salt base64>$<StoredKey base64>:<ServerKey base64>",
// the format PostgreSQL writes and accepts in CREATE ROLE ... PASSWORD.
func ParseSCRAMVerifier(s string) (SCRAMVerifier, error) {
	var v SCRAMVerifier
	rest, ok := strings.CutPrefix(s, SCRAMMechanism+"$")
	if !ok {
		return v, errors.New("parse scram verifier: missing \"SCRAM-SHA-256$\" prefix")
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return v, errors.New("parse scram verifier: missing \"$\" before keys")
	}
	iter, salt, ok1 := strings.Cut(params, ":")
	stored, server, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return v, errors.New("parse scram verifier: missing \":\" separator")
	}
	n, err := parseIterations(iter)
	if err != nil {
		return v, fmt.Errorf("parse scram verifier: %w", err)
	}
	v.Iterations = n
	if v.Salt, err = decodeB64(salt); err != nil || len(v.Salt) == 0 {
		return SCRAMVerifier{}, fmt.Errorf("parse scram verifier: salt: %w", nonEmpty(err))
	}
	if v.StoredKey, err = decodeKey(stored); err != nil {
		return SCRAMVerifier{}, fmt.Errorf("parse scram verifier: stored key: %w", err)
	}
	if v.ServerKey, err = decodeKey(server); err != nil {
		return SCRAMVerifier{}, fmt.Errorf("parse scram verifier: server key: %w", err)
	}
	return v, nil
}

// NewSCRAMVerifier computes the verifier PostgreSQL would store for
// password with the given salt and iteration count. It panics if
// iterations is not in [1, MaxSCRAMIterations] or salt is empty: those are
// programming errors, not input.
func NewSCRAMVerifier(password string, salt []byte, iterations int) SCRAMVerifier {
	if iterations < 1 || iterations > MaxSCRAMIterations || len(salt) == 0 {
		panic(fmt.Sprintf("BUG: NewSCRAMVerifier: iterations %d, salt length %d", iterations, len(salt)))
	}
	clientKey, serverKey, err := keysFromPassword(password, salt, iterations)
	if err != nil {
		panic("BUG: NewSCRAMVerifier: " + err.Error())
	}
	return SCRAMVerifier{
		Iterations: iterations,
		Salt:       append([]byte(nil), salt...),
		StoredKey:  sha256Sum(clientKey),
		ServerKey:  serverKey,
	}
}

// String formats the verifier the way PostgreSQL stores it.
func (v SCRAMVerifier) String() string {
	return fmt.Sprintf("%s$%d:%s$%s:%s", SCRAMMechanism, v.Iterations,
		b64.EncodeToString(v.Salt), b64.EncodeToString(v.StoredKey), b64.EncodeToString(v.ServerKey))
}

// IsSCRAMVerifier reports whether s is a well-formed SCRAM-SHA-256 secret.
func IsSCRAMVerifier(s string) bool {
	_, err := ParseSCRAMVerifier(s)
	return err == nil
}

func parseIterations(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("invalid iteration count %q", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("invalid iteration count %q", s)
	}
	return n, nil
}

func decodeKey(s string) ([]byte, error) {
	k, err := decodeB64(s)
	if err != nil {
		return nil, err
	}
	if len(k) != scramKeyLen {
		return nil, fmt.Errorf("key is %d bytes, want %d", len(k), scramKeyLen)
	}
	return k, nil
}

func nonEmpty(err error) error {
	if err != nil {
		return err
	}
	return errors.New("empty")
}
