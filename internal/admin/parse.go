package admin

import (
	"fmt"
	"strings"
	"unicode"
)

// Verbs of the console.
const (
	verbShow      = "SHOW"
	verbSet       = "SET"
	verbPause     = "PAUSE"
	verbResume    = "RESUME"
	verbReconnect = "RECONNECT"
	verbReload    = "RELOAD"
	verbShutdown  = "SHUTDOWN"
	verbUpgrade   = "UPGRADE"
)

// showSubjects are the SHOW commands the console answers.
var showSubjects = map[string]bool{
	"HELP": true, "CONFIG": true, "DATABASES": true, "POOLS": true, "CLIENTS": true,
	"SERVERS": true, "USERS": true, "STATS": true, "LISTS": true, "VERSION": true,
	"LOG_LEVEL": true, "PREPARED_STATEMENTS": true, "POOL_SCALING": true, "POOL_COORDINATOR": true, "AUTH_QUERY": true,
	"POOLS_EXTENDED": true, "POOLS_MEMORY": true, "CONNECTIONS": true, "SOCKETS": true,
}

// command is one parsed console statement.
type command struct {
	Verb string // one of the verb* constants
	// Arg is the SHOW subject (upper case), the SET key (lower case) or the
	// database of PAUSE/RESUME/RECONNECT ("" = all, case preserved).
	Arg   string
	Value string // SET value, unquoted
}

// SyntaxError is a statement the console does not understand. The text is
// PgBouncer's.
type SyntaxError struct {
	Statement string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid command '%s', use SHOW HELP;", e.Statement)
}

// maxStatements bounds the statements of one Query.
const maxStatements = 64

// parseQuery parses a whole simple-protocol query. An empty result with a
// nil error means the query held no statement (EmptyQueryResponse).
func parseQuery(q string) ([]command, error) {
	stmts, err := splitStatements(q)
	if err != nil {
		return nil, err
	}
	if len(stmts) > maxStatements {
		return nil, &SyntaxError{Statement: fmt.Sprintf("%d statements in one query (limit %d)", len(stmts), maxStatements)}
	}
	cmds := make([]command, 0, len(stmts))
	for _, s := range stmts {
		c, err := parseStatement(s)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// splitStatements splits q on ';' outside quotes and comments and drops
// empty pieces. A comment, "--" to the end of the line or a "/* */" block
// (nested, as PostgreSQL's), counts as a space, as it does in SQL: pgx's
// Ping sends "-- ping", which PgBouncer's console refuses as an invalid
// command, so that a pgx pool in front of it fails its health checks.
func splitStatements(q string) ([]string, error) {
	var out []string
	var cur strings.Builder
	cut := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote reopens at once: same result
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';':
			cut()
			continue
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				end = len(q) - i
			}
			i += end - 1
			cur.WriteByte(' ')
			continue
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			n, ok := blockComment(q[i:])
			if !ok {
				return nil, &SyntaxError{Statement: strings.TrimSpace(q)}
			}
			i += n - 1
			cur.WriteByte(' ')
			continue
		}
		cur.WriteByte(c)
	}
	if quote != 0 {
		return nil, &SyntaxError{Statement: strings.TrimSpace(q)}
	}
	cut()
	return out, nil
}

// blockComment measures the "/* */" comment at the start of s, nested
// ones inside; false if it does not end.
func blockComment(s string) (int, bool) {
	depth := 0
	for i := 0; i+1 < len(s); i++ {
		switch {
		case s[i] == '/' && s[i+1] == '*':
			depth++
			i++
		case s[i] == '*' && s[i+1] == '/':
			depth--
			i++
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// parseStatement parses one statement without its ';'.
func parseStatement(stmt string) (command, error) {
	bad := &SyntaxError{Statement: stmt}
	toks, ok := tokenize(stmt)
	if !ok || len(toks) == 0 || toks[0].kind != tokWord {
		return command{}, bad
	}
	verb := strings.ToUpper(toks[0].text)
	args := toks[1:]
	switch verb {
	case verbShow:
		if len(args) != 1 || args[0].kind != tokWord {
			return command{}, bad
		}
		subject := strings.ToUpper(args[0].text)
		if !showSubjects[subject] {
			return command{}, bad
		}
		return command{Verb: verb, Arg: subject}, nil
	case verbSet:
		return parseSet(args, bad)
	case verbPause, verbResume, verbReconnect:
		switch {
		case len(args) == 0:
			return command{Verb: verb}, nil
		case len(args) == 1 && (args[0].kind == tokWord || args[0].kind == tokIdent) && args[0].text != "":
			return command{Verb: verb, Arg: args[0].text}, nil
		}
		return command{}, bad
	case verbReload, verbShutdown, verbUpgrade:
		if len(args) != 0 {
			return command{}, bad
		}
		return command{Verb: verb}, nil
	}
	return command{}, bad
}

// parseSet parses the tokens after SET: key (= | TO) value.
func parseSet(args []token, bad error) (command, error) {
	if len(args) != 3 {
		return command{}, bad
	}
	key, op, val := args[0], args[1], args[2]
	if key.kind != tokWord && key.kind != tokIdent || key.text == "" {
		return command{}, bad
	}
	if op.kind != tokEquals && !(op.kind == tokWord && strings.EqualFold(op.text, "to")) {
		return command{}, bad
	}
	if val.kind == tokEquals {
		return command{}, bad
	}
	return command{Verb: verbSet, Arg: strings.ToLower(key.text), Value: val.text}, nil
}

type tokenKind uint8

const (
	tokWord   tokenKind = iota + 1 // bare word
	tokIdent                       // "double quoted"
	tokString                      // 'single quoted'
	tokEquals                      // =
)

type token struct {
	kind tokenKind
	text string // unquoted
}

// tokenize splits a statement into words, quoted strings and '='. Quotes
// are doubled to escape them, as in SQL.
func tokenize(s string) ([]token, bool) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < 0x80 && unicode.IsSpace(rune(c)):
			i++
		case c == '=':
			toks = append(toks, token{kind: tokEquals, text: "="})
			i++
		case c == '\'' || c == '"':
			text, n, ok := unquote(s[i:], c)
			if !ok {
				return nil, false
			}
			kind := tokString
			if c == '"' {
				kind = tokIdent
			}
			toks = append(toks, token{kind: kind, text: text})
			i += n
		default:
			j := i
			for j < len(s) && !isDelimiter(s[j]) {
				j++
			}
			toks = append(toks, token{kind: tokWord, text: s[i:j]})
			i = j
		}
	}
	return toks, true
}

func isDelimiter(c byte) bool {
	return c == '=' || c == '\'' || c == '"' || c < 0x80 && unicode.IsSpace(rune(c))
}

// unquote reads a quoted token at the start of s (s[0] == q) and returns
// its text and the bytes consumed.
func unquote(s string, q byte) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}
