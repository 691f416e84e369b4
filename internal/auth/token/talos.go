package token

import (
	"crypto/rsa"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The Talos roles, lowest to highest. Each is also the name of the pool
// user the client is authenticated as.
const (
	RoleReadOnly  = "read_only"
	RoleReadWrite = "read_write"
	RoleOwner     = "owner"
)

// roleRank orders the roles; names not in it are ignored.
var roleRank = map[string]int{RoleReadOnly: 1, RoleReadWrite: 2, RoleOwner: 3}

// Identity is what a verified Talos token grants.
type Identity struct {
	// Role is RoleOwner, RoleReadWrite or RoleReadOnly: the pool user name.
	Role string
	// ClientID is the token's clientId claim, empty when absent or not a
	// string. It comes from the issuer, not from the pooler: sanitize it
	// before putting it in application_name or logs.
	ClientID string
}

// VerifyTalos checks the password of a client connecting as user "talos"
// to database. The header's kid selects the key in keys (a missing or
// unknown kid is refused), then the token is verified as in VerifyJWT
// (RS256, exp required, nbf) without the preferred_username check.
//
// database must be listed in databases (general.talos.databases). Each
// resource_access key is split at its first ':'; a key without ':' grants
// nothing, and only keys whose part after the ':' equals database count.
// The roles of those entries are merged and the highest wins:
// owner > read_write > read_only. Unknown role names are ignored; no known
// role gives ErrNoRole.
func VerifyTalos(token string, keys TalosKeys, database string, databases []string, now time.Time) (Identity, error) {
	claims, err := parse(token, now, func(t *jwt.Token) (*rsa.PublicKey, error) {
		kid, ok := t.Header["kid"].(string)
		if !ok || kid == "" {
			return nil, ErrMissingKeyID
		}
		key := keys[kid]
		if key == nil {
			return nil, ErrUnknownKeyID
		}
		return key, nil
	})
	if err != nil {
		return Identity{}, err
	}
	// Checked after the signature so that an unauthenticated client learns
	// nothing about the configuration.
	if !slices.Contains(databases, database) {
		return Identity{}, ErrDatabaseNotAllowed
	}
	role := highestRole(claims["resource_access"], database)
	if role == "" {
		return Identity{}, ErrNoRole
	}
	clientID, _ := claims["clientId"].(string)
	return Identity{Role: role, ClientID: clientID}, nil
}

// highestRole walks resource_access ({"<any>:<db>": {"roles": [...]}}) and
// returns the highest known role granted for database, or "". Values of
// unexpected JSON types grant nothing rather than failing the token.
func highestRole(resourceAccess any, database string) string {
	entries, _ := resourceAccess.(map[string]any)
	best, bestRank := "", 0
	for key, entry := range entries {
		_, db, ok := strings.Cut(key, ":")
		if !ok || db != database {
			continue
		}
		obj, _ := entry.(map[string]any)
		roles, _ := obj["roles"].([]any)
		for _, r := range roles {
			name, _ := r.(string)
			if rank := roleRank[name]; rank > bestRank {
				best, bestRank = name, rank
			}
		}
	}
	return best
}
