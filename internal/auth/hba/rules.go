package hba

import (
	"net/netip"
	"strings"
)

// Rule is one parsed pg_hba line. Databases and Users hold the entries as
// written: the keywords "all" (and "sameuser", "replication" for
// databases) bare, names bare or, when they were quoted, still quoted in
// pg_hba syntax, so that `"all"` is the database named all.
type Rule struct {
	Line       int
	Type       string // TypeLocal, TypeHost, TypeHostSSL or TypeHostNoSSL
	Databases  []string
	Users      []string
	Prefix     netip.Prefix // host rules without AllAddrs
	AllAddrs   bool
	Method     Method
	MethodName string // as written; the only trace of an unknown method
}

// Rules is a parsed pg_hba, in file order.
type Rules struct {
	Rules []Rule
}

// Request describes a connection attempt.
type Request struct {
	Local    bool       // unix socket
	TLS      bool       // TLS negotiated (host connections)
	Addr     netip.Addr // client address; IPv4-mapped IPv6 is treated as IPv4
	Database string
	User     string
}

// Match returns the first rule that applies to req; false means none does
// and the client must be rejected. A nil *Rules matches nothing.
func (r *Rules) Match(req Request) (Rule, bool) {
	if r == nil {
		return Rule{}, false
	}
	req.Addr = req.Addr.Unmap()
	for _, rule := range r.Rules {
		if rule.matches(req) {
			return rule, true
		}
	}
	return Rule{}, false
}

func (r Rule) matches(req Request) bool {
	switch r.Type {
	case TypeLocal:
		if !req.Local {
			return false
		}
	case TypeHost, TypeHostSSL, TypeHostNoSSL:
		if req.Local || r.Type == TypeHostSSL && !req.TLS || r.Type == TypeHostNoSSL && req.TLS {
			return false
		}
		if !r.AllAddrs && !(r.Prefix.IsValid() && req.Addr.IsValid() && r.Prefix.Contains(req.Addr)) {
			return false
		}
	default:
		return false
	}
	return matchDatabase(r.Databases, req.Database, req.User) && matchUser(r.Users, req.User)
}

func matchDatabase(entries []string, db, user string) bool {
	for _, e := range entries {
		name, quoted := literal(e)
		switch {
		case quoted:
			if name == db {
				return true
			}
		case e == "all", e == "sameuser" && db == user:
			return true
		case e == "sameuser", e == "replication":
			// replication matches only physical replication connections,
			// which the pooler does not accept.
		case e == db:
			return true
		}
	}
	return false
}

func matchUser(entries []string, user string) bool {
	for _, e := range entries {
		name, quoted := literal(e)
		if !quoted && e == "all" || name == user {
			return true
		}
	}
	return false
}

// String formats the rule as a pg_hba line (options are not kept).
func (r Rule) String() string {
	parts := []string{r.Type, strings.Join(r.Databases, ","), strings.Join(r.Users, ",")}
	switch {
	case r.Type == TypeLocal:
	case r.AllAddrs:
		parts = append(parts, "all")
	default:
		parts = append(parts, r.Prefix.String())
	}
	name := r.MethodName
	if name == "" {
		name = r.Method.String()
	}
	return strings.Join(append(parts, name), " ")
}
