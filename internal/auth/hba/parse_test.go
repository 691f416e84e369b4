package hba

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The example from the pg_doorman documentation.
const docExample = `
# type   database  user   address         method
host     all       all    10.0.0.0/8      md5
hostssl  all       all    0.0.0.0/0       scram-sha-256
hostnossl all      all    192.168.1.0/24  trust
`

func TestParseDocExample(t *testing.T) {
	t.Parallel()
	rules, err := Parse(docExample)
	require.NoError(t, err)
	require.Equal(t, []Rule{
		{Line: 3, Type: TypeHost, Databases: []string{"all"}, Users: []string{"all"},
			Prefix: netip.MustParsePrefix("10.0.0.0/8"), Method: MethodMD5, MethodName: "md5"},
		{Line: 4, Type: TypeHostSSL, Databases: []string{"all"}, Users: []string{"all"},
			Prefix: netip.MustParsePrefix("0.0.0.0/0"), Method: MethodSCRAM, MethodName: "scram-sha-256"},
		{Line: 5, Type: TypeHostNoSSL, Databases: []string{"all"}, Users: []string{"all"},
			Prefix: netip.MustParsePrefix("192.168.1.0/24"), Method: MethodTrust, MethodName: "trust"},
	}, rules.Rules)
}

func TestParseLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		line string
		want Rule
	}{
		{"local", "local all all trust",
			Rule{Type: TypeLocal, Databases: []string{"all"}, Users: []string{"all"}, Method: MethodTrust, MethodName: "trust"}},
		{"local with options and comment", "local\tdb\tbob\tmd5 clientcert=verify-full # why",
			Rule{Type: TypeLocal, Databases: []string{"db"}, Users: []string{"bob"}, Method: MethodMD5, MethodName: "md5"}},
		{"lists and quotes", `host "my db",b,"all" alice, "x,y",carol 127.0.0.1/32 reject`,
			Rule{Type: TypeHost, Databases: []string{`"my db"`, "b", `"all"`}, Users: []string{"alice", `"x,y"`, "carol"},
				Prefix: netip.MustParsePrefix("127.0.0.1/32"), Method: MethodReject, MethodName: "reject"}},
		{"sameuser database", "host sameuser all all trust",
			Rule{Type: TypeHost, Databases: []string{"sameuser"}, Users: []string{"all"}, AllAddrs: true, Method: MethodTrust, MethodName: "trust"}},
		{"escaped quote and hash in quotes", `host "a""b#c" all all trust`,
			Rule{Type: TypeHost, Databases: []string{`"a""b#c"`}, Users: []string{"all"}, AllAddrs: true, Method: MethodTrust, MethodName: "trust"}},
		{"ipv6", "host all all ::1/128 scram-sha-256",
			Rule{Type: TypeHost, Databases: []string{"all"}, Users: []string{"all"}, Prefix: netip.MustParsePrefix("::1/128"), Method: MethodSCRAM, MethodName: "scram-sha-256"}},
		{"host bits masked", "host all all 10.1.2.3/8 md5",
			Rule{Type: TypeHost, Databases: []string{"all"}, Users: []string{"all"}, Prefix: netip.MustParsePrefix("10.0.0.0/8"), Method: MethodMD5, MethodName: "md5"}},
		{"mapped ipv6 prefix", "host all all ::ffff:10.0.0.0/104 md5",
			Rule{Type: TypeHost, Databases: []string{"all"}, Users: []string{"all"}, Prefix: netip.MustParsePrefix("10.0.0.0/8"), Method: MethodMD5, MethodName: "md5"}},
		{"netmask", "host all all 192.168.0.0 255.255.0.0 md5",
			Rule{Type: TypeHost, Databases: []string{"all"}, Users: []string{"all"}, Prefix: netip.MustParsePrefix("192.168.0.0/16"), Method: MethodMD5, MethodName: "md5"}},
		{"ipv6 netmask", "host all all fe80:: ffff:ffff:: md5",
			Rule{Type: TypeHost, Databases: []string{"all"}, Users: []string{"all"}, Prefix: netip.MustParsePrefix("fe80::/32"), Method: MethodMD5, MethodName: "md5"}},
		{"unknown method", "hostssl all all all ldap ldapserver=x",
			Rule{Type: TypeHostSSL, Databases: []string{"all"}, Users: []string{"all"}, AllAddrs: true, Method: MethodUnknown, MethodName: "ldap"}},
		{"crlf", "host all all all trust\r",
			Rule{Type: TypeHost, Databases: []string{"all"}, Users: []string{"all"}, AllAddrs: true, Method: MethodTrust, MethodName: "trust"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, err := Parse("\n  # comment\n" + tt.line)
			require.NoError(t, err)
			require.Len(t, rules.Rules, 1)
			tt.want.Line = 3
			require.Equal(t, tt.want, rules.Rules[0])
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, line, msg string }{
		{"unknown type", "hostgssenc all all all trust", "unsupported connection type"},
		{"include", "include other.conf", "unsupported connection type"},
		{"quoted type", `"host" all all all trust`, "invalid connection type"},
		{"too short", "host all all", "before the user field"},
		{"local without method", "local all all", "before the user field"},
		{"host without address", "host all all md5", "not an IP address"},
		{"host without method", "host all all all", "before the authentication method"},
		{"group", "host all +admins all md5", "group membership"},
		{"file", "host @dbs all all md5", "file inclusion"},
		{"regex", "host all /^a all md5", "regular expression"},
		{"samerole", "host samerole all all md5", "samerole"},
		{"sameuser as user", "host all sameuser all md5", "only valid in the database field"},
		{"samehost", "host all all samehost md5", "samehost"},
		{"samenet", "host all all samenet md5", "samenet"},
		{"hostname", "host all all db.example.com md5", "host names are not supported"},
		{"bad cidr", "host all all 10.0.0.0/33 md5", "invalid CIDR"},
		{"cidr list", "host all all 10.0.0.0/8,10.1.0.0/16 md5", "list is not allowed"},
		{"missing netmask", "host all all 10.0.0.1", "needs a netmask"},
		{"bad netmask", "host all all 10.0.0.0 255.0.255.0 md5", "not contiguous"},
		{"family mismatch netmask", "host all all 10.0.0.0 ffff:: md5", "invalid netmask"},
		{"zone", "host all all fe80::1%eth0 ffff:: md5", "not an IP address"},
		{"unterminated quote", `host "all all all md5`, "unterminated"},
		{"empty list item", "host a,,b all all md5", "empty list element"},
		{"trailing comma", "host a, ", "ends with a comma"},
		{"empty quoted name", `host "" all all md5`, "empty name"},
		{"method list", "host all all all md5,trust", "invalid authentication method"},
		{"quoted method", `host all all all "trust"`, "invalid authentication method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, err := Parse("local all all trust\n" + tt.line)
			require.Nil(t, rules)
			require.ErrorContains(t, err, "pg_hba line 2: ")
			require.ErrorContains(t, err, tt.msg)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, 2, pe.Line)
		})
	}
}

func TestParseReportsEveryBadLine(t *testing.T) {
	t.Parallel()
	_, err := Parse("bogus\nlocal all all trust\nhost all all\n")
	require.Error(t, err)
	var lines []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *ParseError
		require.True(t, errors.As(e, &pe))
		lines = append(lines, pe.Line)
	}
	require.Equal(t, []int{1, 3}, lines)
}

func TestParseEmpty(t *testing.T) {
	t.Parallel()
	rules, err := Parse("  \n# only comments\n\t\n")
	require.NoError(t, err)
	require.Empty(t, rules.Rules)
	_, ok := rules.Match(Request{Local: true, Database: "db", User: "u"})
	require.False(t, ok)
}

func FuzzParse(f *testing.F) {
	f.Add(docExample)
	f.Add(`host "a""b",c all ::ffff:1.2.3.4/120 md5 x=y`)
	f.Add("host all all 10.0.0.0 255.0.0.0 trust\nlocal sameuser \"all\" ldap")
	f.Fuzz(func(t *testing.T, content string) {
		rules, err := Parse(content)
		if err != nil {
			require.Nil(t, rules)
			return
		}
		// Property: every rule formats to a line that parses back to it.
		for _, r := range rules.Rules {
			again, err := Parse(r.String())
			require.NoError(t, err, "%q from %q", r.String(), content)
			require.Len(t, again.Rules, 1)
			r.Line = 1
			require.Equal(t, r, again.Rules[0])
			require.NotContains(t, r.String(), "\n")
			require.False(t, strings.HasPrefix(r.String(), " "))
		}
	})
}
