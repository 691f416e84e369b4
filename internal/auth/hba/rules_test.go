package hba

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	rules, err := Parse(`
local   all          postgres                  trust
local   all          all                       scram-sha-256
hostssl all          all       0.0.0.0/0       scram-sha-256
hostnossl app        all       10.0.0.0/8      md5
host    sameuser     all       192.168.1.0/24  trust
host    "all",other  bob,"x y" 192.168.0.0/16  md5
host    replication  all       all             trust
host    all          all       ::1/128         trust
host    all          all       fe80::/10       reject
host    all          evil      all             reject
host    all          all       all             ldap
`)
	require.NoError(t, err)
	v4 := netip.MustParseAddr
	tests := []struct {
		name string
		req  Request
		line int // 0: no match
	}{
		{"local superuser", Request{Local: true, Database: "db", User: "postgres"}, 2},
		{"local other user", Request{Local: true, Database: "db", User: "alice"}, 3},
		{"local ignores address", Request{Local: true, Addr: v4("10.0.0.1"), Database: "db", User: "alice"}, 3},
		{"tls any address", Request{TLS: true, Addr: v4("8.8.8.8"), Database: "db", User: "alice"}, 4},
		{"tls ipv6 misses ipv4 rule", Request{TLS: true, Addr: v4("2001:db8::1"), Database: "db", User: "alice"}, 12},
		{"plain 10/8 app", Request{Addr: v4("10.1.2.3"), Database: "app", User: "alice"}, 5},
		{"plain 10/8 other db", Request{Addr: v4("10.1.2.3"), Database: "other", User: "alice"}, 12},
		{"mapped ipv4 address", Request{Addr: v4("::ffff:10.1.2.3"), Database: "app", User: "alice"}, 5},
		{"sameuser matches", Request{Addr: v4("192.168.1.5"), Database: "alice", User: "alice"}, 6},
		{"sameuser differs", Request{Addr: v4("192.168.1.5"), Database: "app", User: "alice"}, 12},
		{"quoted all is a name", Request{Addr: v4("192.168.2.5"), Database: "all", User: "bob"}, 7},
		{"quoted all is not a keyword", Request{Addr: v4("192.168.2.5"), Database: "app", User: "bob"}, 12},
		{"list second db", Request{Addr: v4("192.168.2.5"), Database: "other", User: "bob"}, 7},
		{"quoted user with space", Request{Addr: v4("192.168.2.5"), Database: "other", User: "x y"}, 7},
		{"user not in list", Request{Addr: v4("192.168.2.5"), Database: "other", User: "carol"}, 12},
		{"replication keyword never matches", Request{Addr: v4("172.16.0.1"), Database: "replication", User: "a"}, 12},
		{"ipv6 loopback", Request{Addr: v4("::1"), Database: "db", User: "alice"}, 9},
		{"ipv6 link local", Request{Addr: v4("fe80::1"), Database: "db", User: "alice"}, 10},
		{"first match wins over later reject", Request{Addr: v4("::1"), Database: "db", User: "evil"}, 9},
		{"reject rule", Request{Addr: v4("172.16.0.1"), Database: "db", User: "evil"}, 11},
		{"invalid address matches only all", Request{Database: "db", User: "alice"}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rule, ok := rules.Match(tt.req)
			if tt.line == 0 {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, tt.line, rule.Line, "matched %s", rule)
		})
	}
}

func TestMatchTLSAndLocal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		typ      string
		local    bool
		tls      bool
		expected bool
	}{
		{"local rule, socket", TypeLocal, true, false, true},
		{"local rule, tcp", TypeLocal, false, false, false},
		{"host rule, socket", TypeHost, true, false, false},
		{"host rule, plain", TypeHost, false, false, true},
		{"host rule, tls", TypeHost, false, true, true},
		{"hostssl rule, plain", TypeHostSSL, false, false, false},
		{"hostssl rule, tls", TypeHostSSL, false, true, true},
		{"hostnossl rule, plain", TypeHostNoSSL, false, false, true},
		{"hostnossl rule, tls", TypeHostNoSSL, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			line := tt.typ + " all all all trust"
			if tt.typ == TypeLocal {
				line = "local all all trust"
			}
			rules, err := Parse(line)
			require.NoError(t, err)
			_, ok := rules.Match(Request{Local: tt.local, TLS: tt.tls, Addr: netip.MustParseAddr("127.0.0.1"), Database: "d", User: "u"})
			require.Equal(t, tt.expected, ok)
		})
	}
}

func TestMatchNilAndZero(t *testing.T) {
	t.Parallel()
	var rules *Rules
	_, ok := rules.Match(Request{Local: true})
	require.False(t, ok)
	_, ok = (&Rules{Rules: []Rule{{}}}).Match(Request{Local: true, Database: "d", User: "u"})
	require.False(t, ok, "a zero Rule matches nothing")
	require.Equal(t, MethodUnknown, Rule{}.Method)
}
