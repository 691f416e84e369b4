package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckVerifier(t *testing.T) {
	const key32 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "md5", in: "md5c4ca4238a0b923820dcc509a6f75849b"},
		{name: "md5 upper hex", in: "md5C4CA4238A0B923820DCC509A6F75849B"},
		{name: "scram", in: "SCRAM-SHA-256$4096:c2FsdA==$" + key32 + ":" + key32},
		{name: "jwt", in: "jwt-pkey-fpath:/etc/pg_doorman/jwt.pub"},
		{name: "plain text", in: "hunter2", wantErr: "unsupported password format"},
		{name: "md5 short", in: "md5abc", wantErr: "invalid md5 verifier"},
		{name: "md5 not hex", in: "md5zzca4238a0b923820dcc509a6f75849b", wantErr: "invalid md5 verifier"},
		{name: "scram no keys", in: "SCRAM-SHA-256$4096:c2FsdA==", wantErr: "invalid SCRAM-SHA-256 verifier"},
		{name: "scram zero iterations", in: "SCRAM-SHA-256$0:c2FsdA==$" + key32 + ":" + key32, wantErr: "iteration count"},
		{name: "scram bad salt", in: "SCRAM-SHA-256$4096:***$" + key32 + ":" + key32, wantErr: "salt"},
		{name: "scram short key", in: "SCRAM-SHA-256$4096:c2FsdA==$AAAA:" + key32, wantErr: "32 bytes"},
		{name: "jwt no path", in: "jwt-pkey-fpath:", wantErr: "needs a public key file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckVerifier(tt.in)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			if !strings.HasPrefix(tt.in, JWTKeyPrefix) { // a key path is no secret
				require.NotContains(t, err.Error(), tt.in, "the secret must not leak into the error")
			}
		})
	}
}
