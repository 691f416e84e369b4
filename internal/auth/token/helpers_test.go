package token

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// testNow is the injected clock of every test.
var testNow = time.Unix(1_714_450_000, 0)

type testKeySet struct {
	a, b *rsa.PrivateKey // two unrelated RSA keys
	ec   *ecdsa.PrivateKey
}

// testKeys generates the keys once per test binary: 2048-bit RSA
// generation takes a noticeable fraction of a second.
var testKeys = sync.OnceValue(func() testKeySet {
	a, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	b, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return testKeySet{a: a, b: b, ec: ec}
})

// pkixPEM is what `openssl rsa -pubout` writes.
func pkixPEM(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func pkcs1PEM(pub *rsa.PublicKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub)})
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// mint signs claims with method and key, adding header fields (a nil value
// deletes the field).
func mint(t testing.TB, method jwt.SigningMethod, key any, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
			continue
		}
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// unix is testNow shifted by d, as a JWT NumericDate.
func unix(d time.Duration) int64 { return testNow.Add(d).Unix() }

// requireRefusal checks the error contract: one of the fixed *Error values,
// wrapping ErrInvalidToken, never quoting the token.
func requireRefusal(t testing.TB, err, want error, token string) {
	t.Helper()
	require.ErrorIs(t, err, want)
	require.ErrorIs(t, err, ErrInvalidToken)
	var e *Error
	require.ErrorAs(t, err, &e)
	if len(token) >= 16 {
		require.NotContains(t, err.Error(), token)
	}
}
