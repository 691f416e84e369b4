package admin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		query string
		want  []command
		err   string // SyntaxError statement; "" = ok
	}{
		{"show", "SHOW POOLS", []command{{Verb: "SHOW", Arg: "POOLS"}}, ""},
		{"lower case and semicolon", "show pools;", []command{{Verb: "SHOW", Arg: "POOLS"}}, ""},
		{"mixed case, spaces", "  Show\tLog_Level ;  ", []command{{Verb: "SHOW", Arg: "LOG_LEVEL"}}, ""},
		{"several", "SHOW VERSION; RELOAD;SHUTDOWN", []command{{Verb: "SHOW", Arg: "VERSION"}, {Verb: "RELOAD"}, {Verb: "SHUTDOWN"}}, ""},
		{"empty", "", []command{}, ""},
		{"only separators", " ;; ; ", []command{}, ""},
		{"pause all", "PAUSE", []command{{Verb: "PAUSE"}}, ""},
		{"pause db keeps case", "pause MyDb", []command{{Verb: "PAUSE", Arg: "MyDb"}}, ""},
		{"quoted db", `RESUME "my db;x"`, []command{{Verb: "RESUME", Arg: "my db;x"}}, ""},
		{"quoted db with doubled quote", `RECONNECT "a""b"`, []command{{Verb: "RECONNECT", Arg: `a"b`}}, ""},
		{"set quoted", "SET log_level = 'debug'", []command{{Verb: "SET", Arg: "log_level", Value: "debug"}}, ""},
		{"set TO word", "set LOG_LEVEL to warn", []command{{Verb: "SET", Arg: "log_level", Value: "warn"}}, ""},
		{"set no spaces", "SET log_level='info';", []command{{Verb: "SET", Arg: "log_level", Value: "info"}}, ""},
		{"set filter with = and ;", "SET log_level = 'warn,pg_doorman::pool=debug;x'", []command{{Verb: "SET", Arg: "log_level", Value: "warn,pg_doorman::pool=debug;x"}}, ""},
		{"set doubled quote", "SET x = 'it''s'", []command{{Verb: "SET", Arg: "x", Value: "it's"}}, ""},
		{"set empty string", "SET log_level = ''", []command{{Verb: "SET", Arg: "log_level", Value: ""}}, ""},
		{"pgx's ping", "-- ping", []command{}, ""},
		{"line comment after a statement", "SHOW POOLS -- all of them\n;RELOAD", []command{{Verb: "SHOW", Arg: "POOLS"}, {Verb: "RELOAD"}}, ""},
		{"line comment hides a ;", "SHOW POOLS -- ; RELOAD", []command{{Verb: "SHOW", Arg: "POOLS"}}, ""},
		{"block comment between words", "SHOW/* which */POOLS", []command{{Verb: "SHOW", Arg: "POOLS"}}, ""},
		{"nested block comment", "/* a /* b */ ; c */ RELOAD", []command{{Verb: "RELOAD"}}, ""},
		{"comment marks inside quotes", "SET x = '--/*'", []command{{Verb: "SET", Arg: "x", Value: "--/*"}}, ""},
		{"comment marks in a quoted db", `PAUSE "a--b"`, []command{{Verb: "PAUSE", Arg: "a--b"}}, ""},

		{"unknown verb", "SELECT 1", nil, "SELECT 1"},
		{"unknown show", "SHOW FDS", nil, "SHOW FDS"},
		{"show nothing", "SHOW", nil, "SHOW"},
		{"show two words", "SHOW POOLS now", nil, "SHOW POOLS now"},
		{"show quoted", "SHOW 'POOLS'", nil, "SHOW 'POOLS'"},
		{"pause two dbs", "PAUSE a b", nil, "PAUSE a b"},
		{"pause string", "PAUSE 'a'", nil, "PAUSE 'a'"},
		{"pause empty ident", `PAUSE ""`, nil, `PAUSE ""`},
		{"reload arg", "RELOAD x", nil, "RELOAD x"},
		{"set no value", "SET log_level =", nil, "SET log_level ="},
		{"set no operator", "SET log_level debug", nil, "SET log_level debug"},
		{"set bad operator", "SET log_level is debug", nil, "SET log_level is debug"},
		{"set value =", "SET a = =", nil, "SET a = ="},
		{"set string key", "SET 'a' = b", nil, "SET 'a' = b"},
		{"unterminated quote", "SET a = 'b", nil, "SET a = 'b"},
		{"unterminated ident", `PAUSE "a`, nil, `PAUSE "a`},
		{"one bad statement spoils all", "SHOW POOLS; nope", nil, "nope"},
		{"leading equals", "= x", nil, "= x"},
		{"unterminated block comment", "SHOW POOLS /* x", nil, "SHOW POOLS /* x"},
		{"block comment closed once of twice", "/* /* */ RELOAD", nil, "/* /* */ RELOAD"},
		{"a single dash is no comment", "SHOW - POOLS", nil, "SHOW - POOLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseQuery(tt.query)
			if tt.err != "" {
				var se *SyntaxError
				require.ErrorAs(t, err, &se)
				require.Equal(t, tt.err, se.Statement)
				require.Equal(t, "invalid command '"+tt.err+"', use SHOW HELP;", err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseQueryStatementLimit(t *testing.T) {
	t.Parallel()
	_, err := parseQuery(strings.Repeat("SHOW VERSION;", maxStatements))
	require.NoError(t, err)
	_, err = parseQuery(strings.Repeat("SHOW VERSION;", maxStatements+1))
	require.Error(t, err)
}

// render writes a command back as text that parses to the same command.
func render(c command) string {
	quote := func(s, q string) string { return q + strings.ReplaceAll(s, q, q+q) + q }
	switch c.Verb {
	case verbShow:
		return "SHOW " + c.Arg
	case verbSet:
		return "SET " + quote(c.Arg, `"`) + " = " + quote(c.Value, "'")
	case verbPause, verbResume, verbReconnect:
		if c.Arg == "" {
			return c.Verb
		}
		return c.Verb + " " + quote(c.Arg, `"`)
	}
	return c.Verb
}

// FuzzParseQuery checks that parsing never panics, that every accepted
// command is well formed, and that rendering the commands and parsing
// again gives the same commands.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"SHOW POOLS", "show stats;", "SET log_level = 'debug'", "set log_level to warn",
		`PAUSE "a""b"`, "RESUME db; RECONNECT", "RELOAD;SHUTDOWN;", "SET a='it''s'",
		"SHOW 'x", `"`, ";;", "PAUSE a b", "SET log_level = 'warn,x=debug'", "sElEcT 1",
		"-- ping", "SHOW/**/POOLS", "/* /* */ */RELOAD", "PAUSE \"a--b\" -- c\n;RESUME", "SET x = '/*' /*",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		cmds, err := parseQuery(q)
		if err != nil {
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			return
		}
		parts := make([]string, len(cmds))
		for i, c := range cmds {
			switch c.Verb {
			case verbShow:
				require.True(t, showSubjects[c.Arg], "subject %q", c.Arg)
			case verbSet:
				require.NotEmpty(t, c.Arg)
				require.Equal(t, strings.ToLower(c.Arg), c.Arg)
			case verbPause, verbResume, verbReconnect, verbReload, verbShutdown:
			default:
				t.Fatalf("unknown verb %q", c.Verb)
			}
			parts[i] = render(c)
		}
		again, err := parseQuery(strings.Join(parts, ";"))
		require.NoError(t, err, "rendered %q", parts)
		require.Equal(t, cmds, again)
	})
}
