package token

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

const testUser = "billing-service"

func TestVerifyJWT(t *testing.T) {
	t.Parallel()
	k := testKeys()
	rs := func(claims jwt.MapClaims) string { return mint(t, jwt.SigningMethodRS256, k.a, nil, claims) }
	valid := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"preferred_username": testUser, "iat": unix(0), "exp": unix(5 * time.Minute)}
		for key, v := range extra {
			if v == nil {
				delete(c, key)
				continue
			}
			c[key] = v
		}
		return c
	}
	good := rs(valid(nil))
	parts := strings.Split(good, ".")
	forged := parts[0] + "." +
		base64.RawURLEncoding.EncodeToString([]byte(`{"preferred_username":"billing-service","exp":9999999999,"admin":true}`)) +
		"." + parts[2]
	// The classic key confusion: HS256 with the server's public key file as
	// the HMAC secret would verify if the library trusted the header's alg.
	confused := mint(t, jwt.SigningMethodHS256, pkixPEM(t, &k.a.PublicKey), nil, valid(nil))
	none := mint(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil, valid(nil))
	big := rs(valid(jwt.MapClaims{"pad": strings.Repeat("x", MaxTokenLen)}))

	tests := []struct {
		name  string
		token string
		user  string
		want  error // nil: accepted
	}{
		{name: "good", token: good, user: testUser},
		{name: "good, nbf now", token: rs(valid(jwt.MapClaims{"nbf": unix(0)})), user: testUser},
		{name: "good, nbf past", token: rs(valid(jwt.MapClaims{"nbf": unix(-time.Hour)})), user: testUser},
		{name: "good, exp one second ahead", token: rs(valid(jwt.MapClaims{"exp": unix(time.Second)})), user: testUser},
		{name: "iat in the future is not checked", token: rs(valid(jwt.MapClaims{"iat": unix(time.Hour)})), user: testUser},
		{name: "iss and aud are not checked", token: rs(valid(jwt.MapClaims{"iss": "x", "aud": 42})), user: testUser},
		{name: "good, fractional exp", token: rs(valid(jwt.MapClaims{"exp": float64(unix(time.Minute)) + 0.5})), user: testUser},

		{name: "expired", token: rs(valid(jwt.MapClaims{"exp": unix(-time.Second)})), user: testUser, want: ErrTokenExpired},
		{name: "exp equal to now is expired", token: rs(valid(jwt.MapClaims{"exp": unix(0)})), user: testUser, want: ErrTokenExpired},
		{name: "nbf in the future", token: rs(valid(jwt.MapClaims{"nbf": unix(time.Second)})), user: testUser, want: ErrTokenNotValidYet},
		{name: "no exp", token: rs(valid(jwt.MapClaims{"exp": nil})), user: testUser, want: ErrTokenNoExpiry},
		{name: "exp a string", token: rs(valid(jwt.MapClaims{"exp": "tomorrow"})), user: testUser, want: ErrTokenClaims},
		{name: "nbf a string", token: rs(valid(jwt.MapClaims{"nbf": "yesterday"})), user: testUser, want: ErrTokenClaims},

		{name: "wrong key", token: mint(t, jwt.SigningMethodRS256, k.b, nil, valid(nil)), user: testUser, want: ErrTokenSignature},
		{name: "forged payload", token: forged, user: testUser, want: ErrTokenSignature},
		{name: "signature stripped", token: parts[0] + "." + parts[1] + ".", user: testUser, want: ErrTokenSignature},
		{name: "HS256 with the public key as secret", token: confused, user: testUser, want: ErrTokenAlgorithm},
		{name: "HS256 with the public key DER as secret", token: mint(t, jwt.SigningMethodHS256, x509DER(t, k), nil, valid(nil)), user: testUser, want: ErrTokenAlgorithm},
		{name: "alg none", token: none, user: testUser, want: ErrTokenAlgorithm},
		{name: "alg none, upper case", token: headerAlg(t, good, "NONE"), user: testUser, want: ErrTokenAlgorithm},
		{name: "alg missing", token: headerAlg(t, good, ""), user: testUser, want: ErrTokenAlgorithm},
		{name: "RS512 by the right key", token: mint(t, jwt.SigningMethodRS512, k.a, nil, valid(nil)), user: testUser, want: ErrTokenAlgorithm},
		{name: "PS256 by the right key", token: mint(t, jwt.SigningMethodPS256, k.a, nil, valid(nil)), user: testUser, want: ErrTokenAlgorithm},
		{name: "ES256", token: mint(t, jwt.SigningMethodES256, k.ec, nil, valid(nil)), user: testUser, want: ErrTokenAlgorithm},

		{name: "user mismatch", token: good, user: "other", want: ErrTokenUserMismatch},
		{name: "user differs in case", token: good, user: "Billing-Service", want: ErrTokenUserMismatch},
		{name: "user is a prefix", token: good, user: "billing", want: ErrTokenUserMismatch},
		{name: "preferred_username missing", token: rs(valid(jwt.MapClaims{"preferred_username": nil})), user: testUser, want: ErrTokenUserMismatch},
		{name: "preferred_username missing, empty user", token: rs(valid(jwt.MapClaims{"preferred_username": nil})), user: "", want: ErrTokenUserMismatch},
		{name: "preferred_username not a string", token: rs(valid(jwt.MapClaims{"preferred_username": 7})), user: "7", want: ErrTokenUserMismatch},
		{name: "claim name matched exactly", token: rs(valid(jwt.MapClaims{"preferred_username": nil, "Preferred_Username": testUser})), user: testUser, want: ErrTokenUserMismatch},
		{name: "sub is not preferred_username", token: rs(valid(jwt.MapClaims{"preferred_username": nil, "sub": testUser})), user: testUser, want: ErrTokenUserMismatch},

		{name: "empty", token: "", user: testUser, want: ErrTokenMalformed},
		{name: "password", token: "hunter2-but-longer", user: testUser, want: ErrTokenMalformed},
		{name: "two dots", token: "..", user: testUser, want: ErrTokenMalformed},
		{name: "four segments", token: good + ".x", user: testUser, want: ErrTokenMalformed},
		{name: "bad base64", token: "!!.!!.!!", user: testUser, want: ErrTokenMalformed},
		{name: "header not JSON", token: b64("nope") + "." + parts[1] + "." + parts[2], user: testUser, want: ErrTokenMalformed},
		{name: "claims not an object", token: parts[0] + "." + b64("[1,2]") + "." + parts[2], user: testUser, want: ErrTokenMalformed},
		{name: "padded base64", token: parts[0] + "=." + parts[1] + "." + parts[2], user: testUser, want: ErrTokenMalformed},
		{name: "max length garbage is parsed", token: strings.Repeat("a", MaxTokenLen), user: testUser, want: ErrTokenMalformed},
		{name: "one byte over the bound", token: strings.Repeat("a", MaxTokenLen+1), user: testUser, want: ErrTokenTooLong},
		{name: "oversized valid token", token: big, user: testUser, want: ErrTokenTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := VerifyJWT(tc.token, &k.a.PublicKey, tc.user, testNow)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			requireRefusal(t, err, tc.want, tc.token)
		})
	}
}

func TestVerifyJWTNilKeyIsABug(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "BUG: token.VerifyJWT called with a nil key", func() {
		_ = VerifyJWT("a.b.c", nil, testUser, testNow)
	})
}

// TestVerifyJWTFromPEM runs the whole path an operator sets up: a key file
// as openssl writes it, loaded, then a token checked against it.
func TestVerifyJWTFromPEM(t *testing.T) {
	t.Parallel()
	k := testKeys()
	path := writeFile(t, t.TempDir(), "jwt-public.pem", pkixPEM(t, &k.a.PublicKey))
	key, err := LoadRSAPublicKey(path)
	require.NoError(t, err)
	tok := mint(t, jwt.SigningMethodRS256, k.a, nil, jwt.MapClaims{"preferred_username": testUser, "exp": unix(time.Minute)})
	require.NoError(t, VerifyJWT(tok, key, testUser, testNow))
	requireRefusal(t, VerifyJWT(tok, key, testUser, testNow.Add(time.Minute)), ErrTokenExpired, tok)
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func x509DER(t testing.TB, k testKeySet) []byte {
	t.Helper()
	block := pkixPEM(t, &k.a.PublicKey)
	lines := strings.Split(strings.TrimSpace(string(block)), "\n")
	der, err := base64.StdEncoding.DecodeString(strings.Join(lines[1:len(lines)-1], ""))
	require.NoError(t, err)
	return der
}

// headerAlg replaces the token's header with {"alg":alg,"typ":"JWT"},
// dropping alg when it is empty; the signature no longer matches, which
// must not matter because the alg is refused first.
func headerAlg(t testing.TB, token, alg string) string {
	t.Helper()
	parts := strings.SplitN(token, ".", 2)
	require.Len(t, parts, 2)
	h := `{"typ":"JWT"}`
	if alg != "" {
		h = `{"alg":"` + alg + `","typ":"JWT"}`
	}
	return b64(h) + "." + parts[1]
}
