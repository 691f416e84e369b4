package hba

import "github.com/doorman-go/doorman/internal/auth"

// Method is the authentication method of a rule. The zero value is
// MethodUnknown, which rejects, so a zero Rule never lets anyone in.
type Method int

// Methods the pooler implements; anything else is MethodUnknown.
const (
	MethodUnknown Method = iota
	MethodTrust
	MethodMD5
	MethodSCRAM
	MethodReject
)

// ParseMethod maps a pg_hba method keyword to a Method (case-sensitive, as
// in PostgreSQL).
func ParseMethod(name string) Method {
	switch name {
	case "trust":
		return MethodTrust
	case "md5":
		return MethodMD5
	case "scram-sha-256":
		return MethodSCRAM
	case "reject":
		return MethodReject
	default:
		return MethodUnknown
	}
}

// String returns the pg_hba keyword, or "unknown".
func (m Method) String() string {
	switch m {
	case MethodTrust:
		return "trust"
	case MethodMD5:
		return "md5"
	case MethodSCRAM:
		return "scram-sha-256"
	case MethodReject:
		return "reject"
	default:
		return "unknown"
	}
}

// Decision is what the pooler does with a client after the pg_hba match.
type Decision int

// Decisions. The zero value rejects.
const (
	DecisionReject Decision = iota
	DecisionTrust
	DecisionMD5
	DecisionSCRAM
)

// String names the decision for logs.
func (d Decision) String() string {
	switch d {
	case DecisionTrust:
		return "trust"
	case DecisionMD5:
		return "md5"
	case DecisionSCRAM:
		return "scram-sha-256"
	default:
		return "reject"
	}
}

// Decide picks the challenge for a client whose matched rule has method m
// and whose stored password (from the pooler's config) is stored, following
// PostgreSQL:
//   - trust: no password is asked, whatever is stored;
//   - md5: an MD5 challenge for an MD5 hash or a plaintext password, but a
//     SCRAM exchange when the stored secret is a SCRAM verifier (an MD5
//     response cannot be checked against it);
//   - scram-sha-256: SCRAM for a SCRAM verifier or a plaintext password; an
//     MD5 hash cannot take part in SCRAM, so the client is rejected;
//   - reject, unknown methods, or an empty stored password: reject.
func (m Method) Decide(stored string) Decision {
	switch m {
	case MethodTrust:
		return DecisionTrust
	case MethodMD5, MethodSCRAM:
	default:
		return DecisionReject
	}
	switch {
	case stored == "":
		return DecisionReject
	case auth.IsSCRAMVerifier(stored):
		return DecisionSCRAM
	case auth.IsMD5Verifier(stored):
		if m == MethodMD5 {
			return DecisionMD5
		}
		return DecisionReject
	case m == MethodMD5:
		return DecisionMD5
	default:
		return DecisionSCRAM
	}
}
