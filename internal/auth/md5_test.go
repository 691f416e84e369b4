package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Captured from PostgreSQL 15: SET password_encryption = 'md5';
// CREATE ROLE alice PASSWORD 'secret'; SELECT rolpassword FROM pg_authid.
const pgMD5Alice = "md54a0a68b43b6cd5cf266fa02f196e2371"

func TestMD5Verifier(t *testing.T) {
	t.Parallel()
	require.Equal(t, pgMD5Alice, MD5Verifier("alice", "secret"))
	require.True(t, IsMD5Verifier(MD5Verifier("bob", "")))
}

func TestMD5Response(t *testing.T) {
	t.Parallel()
	salt := [4]byte{1, 2, 3, 4}
	// Computed independently: "md5" + md5(hex(verifier) + salt) in Python.
	const want = "md598a0412b9c31436fc53776e863350083"
	require.Equal(t, want, MD5Response(pgMD5Alice, salt))

	tests := []struct {
		name     string
		verifier string
		response string
		ok       bool
	}{
		{name: "correct", verifier: pgMD5Alice, response: want, ok: true},
		{name: "wrong response", verifier: pgMD5Alice, response: "md598a0412b9c31436fc53776e863350084"},
		{name: "empty response", verifier: pgMD5Alice, response: ""},
		{name: "response without prefix", verifier: pgMD5Alice, response: want[3:]},
		{name: "verifier of another user", verifier: MD5Verifier("bob", "secret"), response: want},
		{name: "scram verifier never matches", verifier: pgSCRAMUser, response: MD5Response(pgSCRAMUser, salt)},
		{name: "plaintext verifier never matches", verifier: "secret", response: MD5Response("secret", salt)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.ok, CheckMD5(tt.verifier, salt, tt.response))
		})
	}
	require.False(t, CheckMD5(pgMD5Alice, [4]byte{4, 3, 2, 1}, want), "another salt")
}

func TestIsMD5Verifier(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in string
		ok bool
	}{
		{pgMD5Alice, true},
		{"md5" + "0123456789abcdef0123456789abcdef", true},
		{"md5" + "0123456789ABCDEF0123456789abcdef", false},
		{"md5" + "0123456789abcdef0123456789abcde", false},
		{"md5" + "0123456789abcdef0123456789abcdef0", false},
		{"MD5" + "0123456789abcdef0123456789abcdef", false},
		{"md5" + "0123456789abcdef0123456789abcdeg", false},
		{"", false},
		{pgSCRAMUser, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.ok, IsMD5Verifier(tt.in), tt.in)
	}
}
