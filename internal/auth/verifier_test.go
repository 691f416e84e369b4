package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Verifiers captured from PostgreSQL 15 (postgres --single; SET
// password_encryption = 'scram-sha-256'; CREATE ROLE ... PASSWORD ...;
// SELECT rolpassword FROM pg_authid). The non-ASCII passwords exercise
// SASLprep and its fallback to the raw password.
const pgSCRAMUser = "SCRAM-SHA-256$4096:Sw6iHe2bRGDBoT2QTMXvcQ==$eYWNGWvZ47QPVeWOpVsSso9h2YK2nZGYidKEZxMrG/s=:oqXcjPUyfsikyFDW8QhLT/q6eY7H9NTpBRfNOE6eKPc="

var pgSCRAMFixtures = []struct {
	name, password, verifier string
}{
	{"ascii", "pencil", pgSCRAMUser},
	{"nfkc halfwidth katakana", "пароль ｸ",
		"SCRAM-SHA-256$4096:5+L9m3St/V4Fec1+sEhBOg==$l8JB9vOrjXWeiUx4sTICTR4I9PQYv0L8hqDitW3CyUE=:IfyM027Bi/UCfh2YOwOjhyelmvobuMChAoF8Z9n/8Fg="},
	{"nbsp to space, soft hyphen to nothing", "a\u00a0b\u00adc",
		"SCRAM-SHA-256$4096:xqaFYhgrtgeiHrK9JalwrA==$6tAVPTCNnR96Luqa/kn1dGMBE314zTWdUPFTDMNWB/s=:W2/CraL7njUb6658u3f5/KPJOGnSuNW3zY31qXEwsbA="},
	{"bidi violation falls back to raw", "\u05d0a",
		"SCRAM-SHA-256$4096:iSgDYcMg+B8+lnvdlKPNRg==$MqIbSdBq64HvIVtz82jgHtMclYtwqVCW5O1YNRRAMNk=:Eo6IOyRrUJjN8dWPirRWO+64nV9ioLrgfgwHMXSsNSE="},
	{"rtl only", "\u05d0\u05d1",
		"SCRAM-SHA-256$4096:HR++oQFFKFkSVRopmwgjLA==$ehp2/7g5FF9R1uZsHuRrYIZFyuTygDhGnb0LVKQVorY=:w9wEgBOkkEImch05LUgEFxBUBpAqS5jENmqf5rZLHco="},
	{"prohibited control falls back to raw", "x\u0007\u00e9",
		"SCRAM-SHA-256$4096:i/+JLs5FeCqP75lFzZLQ4Q==$4r6CVfWv+Mm00eNW03wUrSc+TOSWsgwcOgEYIMN+0r4=:x4AhfqOOXRvHF5V+yTk54/XQplnrj2NweHIoV5ELO7Y="},
}

func TestSCRAMVerifierMatchesPostgres(t *testing.T) {
	t.Parallel()
	for _, tt := range pgSCRAMFixtures {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := ParseSCRAMVerifier(tt.verifier)
			require.NoError(t, err)
			require.Equal(t, 4096, v.Iterations)
			require.Len(t, v.Salt, 16)
			require.Equal(t, tt.verifier, v.String())
			require.True(t, IsSCRAMVerifier(tt.verifier))
			require.Equal(t, tt.verifier, NewSCRAMVerifier(tt.password, v.Salt, v.Iterations).String())
		})
	}
}

func TestSaslPrep(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"pencil", "pencil"},
		{"a\x07b", "a\x07b"}, // ASCII is never touched, as in PostgreSQL
		{"I\u00adX", "IX"},
		{"\u00aa", "a"},
		{"\u2168", "IX"},
		{"a\u2000b", "a b"},
		{"\u00ad", "\u00ad"}, // empty after mapping: raw
		{"\u0007\u00e9", "\u0007\u00e9"},
		{"\u0627\u0031", "\u0627\u0031"}, // RandAL not last: raw
		{"\u0627\u0031\u0628", "\u0627\u0031\u0628"},
		{"\u0627\u00a0\u0031", "\u0627\u00a0\u0031"}, // ends with a digit: raw
		{"\u0031\u00a0\u0627", "\u0031\u00a0\u0627"}, // starts with a digit: raw
		{"\u0627\u00a0\u0628", "\u0627 \u0628"},
		{"\u0627\u00a0b\u0628", "\u0627\u00a0b\u0628"}, // RandAL with L: raw
		{"\xff\xfe", "\xff\xfe"},                       // invalid UTF-8: raw
		{"\U000E0001x\u00e9", "\U000E0001x\u00e9"},
		{"\u00aa\u0221", "\u00aa\u0221"}, // U+0221 is unassigned in Unicode 3.2: raw
		{"\u00aa\u00e9", "a\u00e9"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, saslPrep(tt.in), "%q", tt.in)
	}
}

func TestSaslPrepTablesSortedAndDisjoint(t *testing.T) {
	t.Parallel()
	tables := map[string][]runeRange{
		"nonASCIISpaces": nonASCIISpaces, "mappedToNothing": mappedToNothing,
		"prohibitedOutput": prohibitedOutput, "unassigned32": unassigned32,
		"randALCat": randALCat, "lCat": lCat,
	}
	for name, table := range tables {
		for i, r := range table {
			require.LessOrEqual(t, r.lo, r.hi, "%s[%d]", name, i)
			if i > 0 {
				require.Less(t, table[i-1].hi, r.lo, "%s[%d]", name, i)
			}
		}
	}
}

func TestParseSCRAMVerifierErrors(t *testing.T) {
	t.Parallel()
	const key = "eYWNGWvZ47QPVeWOpVsSso9h2YK2nZGYidKEZxMrG/s="
	tests := []struct{ name, in, msg string }{
		{"empty", "", "prefix"},
		{"md5", pgMD5Alice, "prefix"},
		{"wrong mechanism", "SCRAM-SHA-1$4096:c2FsdA==$" + key + ":" + key, "prefix"},
		{"no keys", "SCRAM-SHA-256$4096:c2FsdA==", "before keys"},
		{"no colon", "SCRAM-SHA-256$4096c2FsdA==$" + key + ":" + key, "separator"},
		{"no key colon", "SCRAM-SHA-256$4096:c2FsdA==$" + key + key, "separator"},
		{"zero iterations", "SCRAM-SHA-256$0:c2FsdA==$" + key + ":" + key, "iteration"},
		{"signed iterations", "SCRAM-SHA-256$+4096:c2FsdA==$" + key + ":" + key, "iteration"},
		{"huge iterations", "SCRAM-SHA-256$99999999999999999999:c2FsdA==$" + key + ":" + key, "iteration"},
		{"empty salt", "SCRAM-SHA-256$4096:$" + key + ":" + key, "salt"},
		{"bad salt", "SCRAM-SHA-256$4096:c2Fsd!==$" + key + ":" + key, "salt"},
		{"salt with newline", "SCRAM-SHA-256$4096:c2Fs\ndA==$" + key + ":" + key, "salt"},
		{"short stored key", "SCRAM-SHA-256$4096:c2FsdA==$c2FsdA==:" + key, "stored key"},
		{"bad server key", "SCRAM-SHA-256$4096:c2FsdA==$" + key + ":" + key + "x", "server key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSCRAMVerifier(tt.in)
			require.ErrorContains(t, err, tt.msg)
			require.False(t, IsSCRAMVerifier(tt.in))
		})
	}
}

func TestNewSCRAMVerifierPanicsOnBadArguments(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { NewSCRAMVerifier("x", []byte("salt"), 0) })
	require.Panics(t, func() { NewSCRAMVerifier("x", nil, 4096) })
	require.Panics(t, func() { NewSCRAMVerifier("x", []byte("salt"), MaxSCRAMIterations+1) })
}

func FuzzParseSCRAMVerifier(f *testing.F) {
	for _, tt := range pgSCRAMFixtures {
		f.Add(tt.verifier)
	}
	f.Add("SCRAM-SHA-256$1:AA==$:")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSCRAMVerifier(s)
		if err != nil {
			return
		}
		// A parsed verifier formats back to something that parses to itself.
		again, err := ParseSCRAMVerifier(v.String())
		require.NoError(t, err)
		require.Equal(t, v, again)
	})
}
