package token

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// fuzzSeeds are real tokens (good, expired, wrong alg, Talos-shaped) so the
// mutator starts from inputs that get past base64 and JSON decoding.
func fuzzSeeds(f *testing.F) []string {
	k := testKeys()
	kid := map[string]any{"kid": "abc123"}
	claims := jwt.MapClaims{
		"preferred_username": testUser, "exp": unix(time.Minute), "nbf": unix(-time.Minute), "clientId": "svc",
		"resource_access": map[string]any{"postgres.stg:billing": map[string]any{"roles": []string{"owner", "read_only"}}},
	}
	return []string{
		mint(f, jwt.SigningMethodRS256, k.a, kid, claims),
		mint(f, jwt.SigningMethodRS256, k.a, kid, jwt.MapClaims{"exp": unix(-time.Minute)}),
		mint(f, jwt.SigningMethodHS256, pkixPEM(f, &k.a.PublicKey), kid, claims),
		mint(f, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims),
		"", "..", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.e30.", "eyJhbGciOiJub25lIn0.eyJleHAiOjF9.",
	}
}

// requireFuzzRefusal: any input that is refused gets one of the fixed
// errors, never one quoting the input.
func requireFuzzRefusal(t *testing.T, err error, token string) {
	var e *Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, err, ErrInvalidToken)
	if len(token) >= 16 {
		require.NotContains(t, err.Error(), token)
	}
}

func FuzzVerifyJWT(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	pub := &testKeys().a.PublicKey
	f.Fuzz(func(t *testing.T, token string) {
		if err := VerifyJWT(token, pub, testUser, testNow); err != nil {
			requireFuzzRefusal(t, err, token)
		}
	})
}

func FuzzVerifyTalos(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, "billing")
	}
	k := testKeys()
	keys := TalosKeys{"abc123": &k.a.PublicKey, "def456": &k.b.PublicKey}
	f.Fuzz(func(t *testing.T, token, database string) {
		id, err := VerifyTalos(token, keys, database, testDatabases, testNow)
		if err != nil {
			requireFuzzRefusal(t, err, token)
			require.Equal(t, Identity{}, id)
			return
		}
		require.Contains(t, []string{RoleOwner, RoleReadWrite, RoleReadOnly}, id.Role)
	})
}
