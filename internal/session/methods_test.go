package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/auth/hba"
)

// TestChooseMethod is the seed's "Порядок выбора метода" after pg_hba and
// Talos: trust, PAM, SCRAM, MD5, JWT by the stored password's prefix.
func TestChooseMethod(t *testing.T) {
	const (
		scram = "SCRAM-SHA-256$4096:c2FsdA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
		md5   = "md5c4ca4238a0b923820dcc509a6f75849b"
		jwt   = "jwt-pkey-fpath:/etc/pg_doorman/jwt.pem"
	)
	tests := []struct {
		name     string
		rule     hba.Method
		pam      string
		verifier string
		want     credMethod
	}{
		{"trust beats everything", hba.MethodTrust, "login", jwt, credTrust},
		{"trust without a password", hba.MethodTrust, "", "", credTrust},
		{"PAM beats a static SCRAM password", hba.MethodSCRAM, "login", scram, credPAM},
		{"PAM beats a static MD5 password", hba.MethodMD5, "login", md5, credPAM},
		{"PAM beats a JWT key", hba.MethodMD5, "login", jwt, credPAM},
		{"SCRAM verifier", hba.MethodSCRAM, "", scram, credSCRAM},
		{"SCRAM verifier under an md5 rule", hba.MethodMD5, "", scram, credSCRAM},
		{"MD5 verifier under an md5 rule", hba.MethodMD5, "", md5, credMD5},
		{"MD5 verifier under a scram rule fails as PostgreSQL does", hba.MethodSCRAM, "", md5, credSCRAM},
		{"JWT key under a scram rule", hba.MethodSCRAM, "", jwt, credJWT},
		{"JWT key under an md5 rule", hba.MethodMD5, "", jwt, credJWT},
		{"no password: mock SCRAM", hba.MethodMD5, "", "", credSCRAM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, chooseMethod(tt.rule, tt.pam, tt.verifier))
		})
	}
}

func TestSanitizeClientID(t *testing.T) {
	tests := map[string]string{
		"billing-service":         "billing-service",
		"evil\x00\nname\x1b[31m":  "evilname[31m",
		string(make([]byte, 100)): "",
	}
	long := ""
	for range 100 {
		long += "a"
	}
	tests[long] = long[:63]
	for in, want := range tests {
		require.Equal(t, want, sanitizeClientID(in))
	}
}
