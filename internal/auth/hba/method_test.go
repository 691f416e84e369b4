package hba

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/auth"
)

func TestParseMethod(t *testing.T) {
	t.Parallel()
	for _, m := range []Method{MethodTrust, MethodMD5, MethodSCRAM, MethodReject} {
		require.Equal(t, m, ParseMethod(m.String()))
	}
	for _, name := range []string{"password", "peer", "ident", "cert", "ldap", "MD5", "Trust", ""} {
		require.Equal(t, MethodUnknown, ParseMethod(name), name)
	}
	require.Equal(t, "unknown", MethodUnknown.String())
}

func TestDecide(t *testing.T) {
	t.Parallel()
	md5 := auth.MD5Verifier("alice", "secret")
	scram := auth.NewSCRAMVerifier("secret", []byte("0123456789abcdef"), 4096).String()
	tests := []struct {
		method Method
		stored string
		want   Decision
	}{
		{MethodTrust, "", DecisionTrust},
		{MethodTrust, md5, DecisionTrust},
		{MethodTrust, scram, DecisionTrust},
		{MethodMD5, md5, DecisionMD5},
		{MethodMD5, scram, DecisionSCRAM},
		{MethodMD5, "plaintext", DecisionMD5},
		{MethodMD5, "", DecisionReject},
		{MethodSCRAM, scram, DecisionSCRAM},
		{MethodSCRAM, md5, DecisionReject},
		{MethodSCRAM, "plaintext", DecisionSCRAM},
		{MethodSCRAM, "", DecisionReject},
		{MethodReject, scram, DecisionReject},
		{MethodUnknown, scram, DecisionReject},
		{MethodUnknown, "", DecisionReject},
	}
	for _, tt := range tests {
		t.Run(tt.method.String()+"/"+tt.stored, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.method.Decide(tt.stored))
		})
	}
	require.Equal(t, "reject", Decision(0).String())
}
