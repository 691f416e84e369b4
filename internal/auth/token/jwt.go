package token

import (
	"crypto/rsa"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MaxTokenLen bounds the token accepted before any decoding: a password
// message can be up to the pooler's message limit, and base64 plus JSON
// decoding of that much attacker-chosen text buys nothing.
const MaxTokenLen = 16 << 10

// algRS256 is the only signing algorithm accepted. Listing it in
// jwt.WithValidMethods makes the library refuse "none", HS* (the classic
// confusion where the RSA public key is used as an HMAC secret), ES* and
// PS* before any key is looked up.
const algRS256 = "RS256"

// claimPreferredUsername must equal the configured user name exactly.
const claimPreferredUsername = "preferred_username"

// parse verifies the signature with the key keyFor returns, requires exp,
// checks exp and nbf against now with no leeway, and returns the claims.
// Claims decode into jwt.MapClaims: map keys match exactly, where
// encoding/json would match struct fields case-insensitively.
func parse(raw string, now time.Time, keyFor func(*jwt.Token) (*rsa.PublicKey, error)) (jwt.MapClaims, error) {
	if len(raw) > MaxTokenLen {
		return nil, ErrTokenTooLong
	}
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{algRS256}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	claims := jwt.MapClaims{}
	tok, err := p.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		// WithValidMethods already refused other algorithms; checking the
		// type again keeps a wrong key type from ever reaching Verify.
		if _, ok := t.Method.(*jwt.SigningMethodRSA); !ok || t.Method.Alg() != algRS256 {
			return nil, ErrTokenAlgorithm
		}
		return keyFor(t)
	})
	if err != nil {
		return nil, refusal(tok, err)
	}
	return claims, nil
}

// refusal turns a jwt/v5 error into one of this package's fixed errors. The
// library's texts are dropped: a JSON syntax error can quote input bytes.
func refusal(tok *jwt.Token, err error) error {
	var own *Error
	switch {
	case errors.As(err, &own):
		return own
	case errors.Is(err, jwt.ErrTokenMalformed):
		return ErrTokenMalformed
	case tok != nil && (tok.Method == nil || tok.Method.Alg() != algRS256):
		// Unknown or missing alg (Unverifiable) or a known one not listed
		// (SignatureInvalid): say which, it is the usual issuer mistake.
		return ErrTokenAlgorithm
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrTokenSignature
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return ErrTokenNoExpiry
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrTokenExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return ErrTokenNotValidYet
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		return ErrTokenClaims
	default:
		return ErrTokenMalformed
	}
}

// VerifyJWT checks the password of a user configured with
// "jwt-pkey-fpath:": an RS256 signature by key (HS*, ES*, PS* and none are
// refused), an exp claim that is not reached at now, an nbf claim, if
// present, that is reached at now, and a preferred_username claim equal to
// user byte for byte. There is no leeway; iss, aud, sub and iat are not
// checked. The error, if any, is one of this package's *Error values.
// key must not be nil.
func VerifyJWT(token string, key *rsa.PublicKey, user string, now time.Time) error {
	if key == nil {
		panic("BUG: token.VerifyJWT called with a nil key")
	}
	claims, err := parse(token, now, func(*jwt.Token) (*rsa.PublicKey, error) {
		return key, nil
	})
	if err != nil {
		return err
	}
	name, ok := claims[claimPreferredUsername].(string)
	if !ok || name != user {
		return ErrTokenUserMismatch
	}
	return nil
}
