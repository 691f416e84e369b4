// Package token verifies the two token passwords pg_doorman accepts: an
// RS256 JWT for a user configured with "jwt-pkey-fpath:<file>" (VerifyJWT,
// checking preferred_username against the user name) and a Talos token for
// user "talos" (VerifyTalos, picking the key by the header kid and the pool
// user from the highest role resource_access grants for the database).
//
// LoadRSAPublicKey and LoadTalosKeys read the PEM keys; the caller loads
// them at start and on SIGHUP and passes them in. Verification is pure: no
// I/O, the clock is an argument, no leeway. Tokens over MaxTokenLen are
// refused before decoding. Every refusal is one of the exported *Error
// values (all wrap ErrInvalidToken); its text is fixed, short, never holds
// any part of the token and is meant to be sent to the client as is.
//
// Parsing and signature checks are github.com/golang-jwt/jwt/v5 with RS256
// as the only allowed method, so "none", HS256 keyed with the public key
// and every other algorithm are refused before a key is used. Claims are
// read from a map, so claim names match exactly.
//
// Not done, as the pg_doorman documentation states: no JWKS endpoint (keys
// come from disk), no iss, aud or sub checks, one key per JWT user, fixed
// role names owner > read_write > read_only. Mapping a role to a pool user,
// the "talos" user name, method precedence and sanitizing clientId for
// application_name belong to the caller.
//
// Keys and TalosKeys are read-only after loading; all functions are safe
// for concurrent use.
//
// Spec: RFC 7519 (JWT), RFC 7515 (JWS), and the JWT and Talos sections of
// the pg_doorman authentication documentation.
package token
