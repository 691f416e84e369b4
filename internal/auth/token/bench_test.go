package token

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkVerifyJWT is the cost one JWT login adds; RSA verification
// dominates.
func BenchmarkVerifyJWT(b *testing.B) {
	k := testKeys()
	tok := mint(b, jwt.SigningMethodRS256, k.a, nil, jwt.MapClaims{"preferred_username": testUser, "exp": unix(time.Minute)})
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyJWT(tok, &k.a.PublicKey, testUser, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyJWTGarbage is what an unauthenticated client can make the
// pooler spend per attempt with a maximal-length non-token.
func BenchmarkVerifyJWTGarbage(b *testing.B) {
	pub := &testKeys().a.PublicKey
	tok := "eyJhbGciOiJSUzI1NiJ9." + string(make([]byte, MaxTokenLen-64)) + ".x"
	b.ReportAllocs()
	for b.Loop() {
		_ = VerifyJWT(tok, pub, testUser, testNow)
	}
}
