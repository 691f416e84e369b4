package token

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

var testDatabases = []string{"billing", "inventory"}

func TestVerifyTalos(t *testing.T) {
	t.Parallel()
	k := testKeys()
	keys := TalosKeys{"abc123": &k.a.PublicKey, "def456": &k.b.PublicKey}
	kidA := map[string]any{"kid": "abc123"}
	// The seed's example token.
	seedClaims := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{
			"exp":      unix(5 * time.Minute),
			"nbf":      unix(-time.Minute),
			"clientId": "billing-service",
			"resource_access": map[string]any{
				"postgres.stg:billing":   map[string]any{"roles": []string{"read_write"}},
				"postgres.stg:inventory": map[string]any{"roles": []string{"read_only", "read_write"}},
			},
		}
		for key, v := range extra {
			if v == nil {
				delete(c, key)
				continue
			}
			c[key] = v
		}
		return c
	}
	withAccess := func(access map[string]any) string {
		return mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"resource_access": access}))
	}
	roles := func(r ...any) map[string]any { return map[string]any{"roles": r} }
	good := mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(nil))

	tests := []struct {
		name      string
		token     string
		database  string
		databases []string // nil: testDatabases
		want      Identity
		wantErr   error
	}{
		{name: "seed example, billing", token: good, database: "billing", want: Identity{Role: RoleReadWrite, ClientID: "billing-service"}},
		{name: "seed example, inventory takes the max", token: good, database: "inventory", want: Identity{Role: RoleReadWrite, ClientID: "billing-service"}},
		{name: "second key by its kid", token: mint(t, jwt.SigningMethodRS256, k.b, map[string]any{"kid": "def456"}, seedClaims(nil)), database: "billing", want: Identity{Role: RoleReadWrite, ClientID: "billing-service"}},
		{name: "roles merged across entries", database: "billing", want: Identity{Role: RoleOwner, ClientID: "billing-service"}, token: withAccess(map[string]any{
			"postgres.stg:billing":  roles("read_only"),
			"postgres.prod:billing": roles("owner", "read_only"),
			"other:billing":         roles("read_write"),
		})},
		{name: "read_only alone", token: withAccess(map[string]any{"x:billing": roles("read_only")}), database: "billing", want: Identity{Role: RoleReadOnly, ClientID: "billing-service"}},
		{name: "unknown role names next to a known one", token: withAccess(map[string]any{"x:billing": roles("admin", "read_only", "OWNER")}), database: "billing", want: Identity{Role: RoleReadOnly, ClientID: "billing-service"}},
		{name: "empty prefix", token: withAccess(map[string]any{":billing": roles("owner")}), database: "billing", want: Identity{Role: RoleOwner, ClientID: "billing-service"}},
		{name: "no clientId", token: mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"clientId": nil})), database: "billing", want: Identity{Role: RoleReadWrite}},
		{name: "clientId not a string", token: mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"clientId": 12})), database: "billing", want: Identity{Role: RoleReadWrite}},
		{name: "split at the first colon", token: withAccess(map[string]any{"a:b:c": roles("owner")}), database: "b:c", databases: []string{"b:c"}, want: Identity{Role: RoleOwner, ClientID: "billing-service"}},

		{name: "split at the first colon, not the last", token: withAccess(map[string]any{"postgres:stg:billing": roles("owner")}), database: "billing", wantErr: ErrNoRole},
		{name: "entry for another database only", token: withAccess(map[string]any{"postgres.stg:inventory": roles("owner")}), database: "billing", wantErr: ErrNoRole},
		{name: "key without colon", token: withAccess(map[string]any{"billing": roles("owner")}), database: "billing", wantErr: ErrNoRole},
		{name: "database compared exactly", token: withAccess(map[string]any{"x:Billing": roles("owner"), "x:billing ": roles("owner")}), database: "billing", wantErr: ErrNoRole},
		{name: "unknown role names only", token: withAccess(map[string]any{"x:billing": roles("admin", "Owner", "readonly")}), database: "billing", wantErr: ErrNoRole},
		{name: "roles empty", token: withAccess(map[string]any{"x:billing": roles()}), database: "billing", wantErr: ErrNoRole},
		{name: "roles not strings", token: withAccess(map[string]any{"x:billing": roles(3, true, nil, map[string]any{"owner": 1})}), database: "billing", wantErr: ErrNoRole},
		{name: "roles not a list", token: withAccess(map[string]any{"x:billing": map[string]any{"roles": "owner"}}), database: "billing", wantErr: ErrNoRole},
		{name: "entry not an object", token: withAccess(map[string]any{"x:billing": []string{"owner"}}), database: "billing", wantErr: ErrNoRole},
		{name: "resource_access missing", token: mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"resource_access": nil})), database: "billing", wantErr: ErrNoRole},
		{name: "resource_access not an object", token: mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"resource_access": "postgres.stg:billing"})), database: "billing", wantErr: ErrNoRole},
		{name: "database not in databases", token: withAccess(map[string]any{"x:secret": roles("owner")}), database: "secret", wantErr: ErrDatabaseNotAllowed},
		{name: "no databases configured", token: good, database: "billing", databases: []string{}, wantErr: ErrDatabaseNotAllowed},

		{name: "unknown kid", token: mint(t, jwt.SigningMethodRS256, k.a, map[string]any{"kid": "zzz"}, seedClaims(nil)), database: "billing", wantErr: ErrUnknownKeyID},
		{name: "missing kid", token: mint(t, jwt.SigningMethodRS256, k.a, nil, seedClaims(nil)), database: "billing", wantErr: ErrMissingKeyID},
		{name: "empty kid", token: mint(t, jwt.SigningMethodRS256, k.a, map[string]any{"kid": ""}, seedClaims(nil)), database: "billing", wantErr: ErrMissingKeyID},
		{name: "kid not a string", token: mint(t, jwt.SigningMethodRS256, k.a, map[string]any{"kid": 123}, seedClaims(nil)), database: "billing", wantErr: ErrMissingKeyID},
		{name: "kid of the other key", token: mint(t, jwt.SigningMethodRS256, k.a, map[string]any{"kid": "def456"}, seedClaims(nil)), database: "billing", wantErr: ErrTokenSignature},
		{name: "HS256 with the public key as secret", token: mint(t, jwt.SigningMethodHS256, pkixPEM(t, &k.a.PublicKey), kidA, seedClaims(nil)), database: "billing", wantErr: ErrTokenAlgorithm},
		{name: "alg none", token: mint(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kidA, seedClaims(nil)), database: "billing", wantErr: ErrTokenAlgorithm},
		{name: "expired", token: mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"exp": unix(-time.Second)})), database: "billing", wantErr: ErrTokenExpired},
		{name: "no exp", token: mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"exp": nil})), database: "billing", wantErr: ErrTokenNoExpiry},
		{name: "nbf in the future", token: mint(t, jwt.SigningMethodRS256, k.a, kidA, seedClaims(jwt.MapClaims{"nbf": unix(time.Minute)})), database: "billing", wantErr: ErrTokenNotValidYet},
		{name: "garbage", token: "talos", database: "billing", wantErr: ErrTokenMalformed},
		{name: "oversized", token: strings.Repeat("a", MaxTokenLen+1), database: "billing", wantErr: ErrTokenTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbs := tc.databases
			if dbs == nil {
				dbs = testDatabases
			}
			id, err := VerifyTalos(tc.token, keys, tc.database, dbs, testNow)
			if tc.wantErr != nil {
				requireRefusal(t, err, tc.wantErr, tc.token)
				require.Equal(t, Identity{}, id)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, id)
		})
	}
}

func TestVerifyTalosNoRoleText(t *testing.T) {
	t.Parallel()
	require.EqualError(t, ErrNoRole, "Token may not contain valid roles for the requested databases")
}

func TestVerifyTalosNilKeyIsUnknown(t *testing.T) {
	t.Parallel()
	k := testKeys()
	tok := mint(t, jwt.SigningMethodRS256, k.a, map[string]any{"kid": "abc123"}, jwt.MapClaims{"exp": unix(time.Minute)})
	_, err := VerifyTalos(tok, TalosKeys{"abc123": nil}, "billing", testDatabases, testNow)
	requireRefusal(t, err, ErrUnknownKeyID, tok)
	_, err = VerifyTalos(tok, nil, "billing", testDatabases, testNow)
	requireRefusal(t, err, ErrUnknownKeyID, tok)
}
