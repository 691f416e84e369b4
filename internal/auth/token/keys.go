package token

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxKeyFileSize bounds what LoadRSAPublicKey reads: an 8192-bit RSA
// public key in PEM is under 1.5 KiB, so anything near this is not a key.
const maxKeyFileSize = 64 << 10

// minKeyBits matches crypto/rsa, which refuses to verify with smaller keys;
// failing at load says so instead of "signature invalid" on every login.
const minKeyBits = 1024

// LoadRSAPublicKey reads an RSA public key from a PEM file holding a
// "PUBLIC KEY" (PKIX, what `openssl rsa -pubout` writes) or an
// "RSA PUBLIC KEY" (PKCS#1) block; the first PEM block is used. Errors name
// the file and the problem, never its content.
func LoadRSAPublicKey(path string) (*rsa.PublicKey, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("load public key %s: %w", path, err)
	}
	key, err := parseRSAPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("load public key %s: %w", path, err)
	}
	return key, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("file larger than %d KiB, not a PEM public key", maxKeyFileSize>>10)
	}
	return data, nil
}

func parseRSAPublicKey(data []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var key *rsa.PublicKey
	switch block.Type {
	case "PUBLIC KEY":
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PUBLIC KEY block: %w", err)
		}
		switch k := pub.(type) {
		case *rsa.PublicKey:
			key = k
		case *ecdsa.PublicKey:
			return nil, errors.New("key is ECDSA, only RSA (RS256) is supported")
		case ed25519.PublicKey:
			return nil, errors.New("key is Ed25519, only RSA (RS256) is supported")
		default:
			return nil, fmt.Errorf("key type %T is not RSA", pub)
		}
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse RSA PUBLIC KEY block: %w", err)
		}
		key = k
	default:
		if strings.Contains(block.Type, "PRIVATE KEY") {
			return nil, errors.New("file holds a private key; give the public key (openssl rsa -in key.pem -pubout)")
		}
		return nil, fmt.Errorf("PEM block %q is not a public key (want \"PUBLIC KEY\" or \"RSA PUBLIC KEY\")", block.Type)
	}
	if bits := key.N.BitLen(); bits < minKeyBits {
		return nil, fmt.Errorf("RSA key has %d bits, at least %d required", bits, minKeyBits)
	}
	return key, nil
}

// TalosKeys maps a key id (the JWT header "kid") to its public key. It is
// not modified after LoadTalosKeys returns, so concurrent VerifyTalos calls
// may share it.
type TalosKeys map[string]*rsa.PublicKey

// LoadTalosKeys loads general.talos.keys. A key's id is its file's base name
// without the extension: /etc/keys/abc123.pem has kid "abc123". Two files
// giving one kid, or a name giving an empty kid, are errors. No paths give
// an empty, non-nil TalosKeys.
func LoadTalosKeys(paths []string) (TalosKeys, error) {
	keys := make(TalosKeys, len(paths))
	from := make(map[string]string, len(paths))
	for _, path := range paths {
		base := filepath.Base(path)
		kid := strings.TrimSuffix(base, filepath.Ext(base))
		if kid == "" || kid == "." || kid == string(filepath.Separator) {
			return nil, fmt.Errorf("talos key %s: file name gives an empty key id", path)
		}
		if prev, ok := from[kid]; ok {
			return nil, fmt.Errorf("talos key %s: key id %q already given by %s", path, kid, prev)
		}
		key, err := LoadRSAPublicKey(path)
		if err != nil {
			return nil, fmt.Errorf("talos key id %q: %w", kid, err)
		}
		keys[kid] = key
		from[kid] = path
	}
	return keys, nil
}
