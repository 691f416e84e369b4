package generate

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// node is one key of the document Render and Reference build, written by
// writeYAML or writeTOML. A leaf has val (string, int64, bool or []string);
// a table has children; an array of tables has items.
type node struct {
	key      string
	val      any
	comment  string    // already in the chosen language, "" for none
	off      bool      // written commented out (the value it would have)
	children []*node   // table
	items    [][]*node // array of tables, e.g. users
	isItems  bool
}

func leaf(key string, val any, comment string) *node {
	return &node{key: key, val: val, comment: comment}
}

func table(key, comment string, children ...*node) *node {
	return &node{key: key, comment: comment, children: children}
}

// lines accumulates the output; the first write error sticks.
type lines struct {
	w   io.Writer
	err error
}

func (l *lines) printf(format string, args ...any) {
	if l.err == nil {
		_, l.err = fmt.Fprintf(l.w, format, args...)
	}
}

// comment writes c as "# c" lines at indent.
func (l *lines) comment(indent, c string) {
	if c == "" {
		return
	}
	for _, s := range strings.Split(c, "\n") {
		l.printf("%s# %s\n", indent, s)
	}
}

func writeYAML(w io.Writer, header string, top []*node) error {
	l := &lines{w: w}
	l.comment("", header)
	for i, n := range top {
		if i > 0 || header != "" {
			l.printf("\n")
		}
		yamlNode(l, n, "", false)
	}
	return l.err
}

func yamlNode(l *lines, n *node, indent string, off bool) {
	off = off || n.off
	l.comment(indent, n.comment)
	p := indent
	if off {
		p += "# "
	}
	key := yamlKey(n.key)
	switch {
	case n.isItems:
		if len(n.items) == 0 {
			l.printf("%s%s: []\n", p, key)
			return
		}
		l.printf("%s%s:\n", p, key)
		for _, item := range n.items {
			for j, c := range item {
				// "- " starts the item at the first key; the others line
				// up under it.
				yamlItemKey(l, c, indent+"  ", off, j == 0)
			}
		}
	case n.val == nil:
		if len(n.children) == 0 {
			l.printf("%s%s: {}\n", p, key)
			return
		}
		l.printf("%s%s:\n", p, key)
		for _, c := range n.children {
			yamlNode(l, c, indent+"  ", off)
		}
	default:
		l.printf("%s%s: %s\n", p, key, scalar(n.val, yamlKind))
	}
}

// yamlItemKey writes one key of a list item: the first behind "- ".
func yamlItemKey(l *lines, n *node, indent string, off, first bool) {
	off = off || n.off
	l.comment(indent+"  ", n.comment)
	p := indent
	if off {
		p += "# "
	}
	dash := "  "
	if first {
		dash = "- "
	}
	l.printf("%s%s%s: %s\n", p, dash, yamlKey(n.key), scalar(n.val, yamlKind))
}

func writeTOML(w io.Writer, header string, top []*node) error {
	l := &lines{w: w}
	l.comment("", header)
	for _, n := range top {
		tomlTable(l, nil, n, false)
	}
	return l.err
}

// tomlTable writes [path.key] with its scalars, then its sub-tables: TOML
// wants a table's own keys before any nested header.
func tomlTable(l *lines, path []string, n *node, off bool) {
	off = off || n.off
	path = append(append([]string(nil), path...), tomlKey(n.key))
	p := ""
	if off {
		p = "# "
	}
	l.printf("\n")
	l.comment("", n.comment)
	l.printf("%s[%s]\n", p, strings.Join(path, "."))
	for _, c := range n.children {
		if c.val != nil {
			tomlScalar(l, c, off)
		}
	}
	for _, c := range n.children {
		switch {
		case c.isItems:
			for i, item := range c.items {
				l.printf("\n")
				if i == 0 {
					l.comment("", c.comment)
				}
				l.printf("%s[[%s]]\n", p, strings.Join(append(path, tomlKey(c.key)), "."))
				for _, k := range item {
					tomlScalar(l, k, off)
				}
			}
		case c.val == nil:
			tomlTable(l, path, c, off)
		}
	}
}

func tomlScalar(l *lines, n *node, off bool) {
	l.comment("", n.comment)
	p := ""
	if off || n.off {
		p = "# "
	}
	l.printf("%s%s = %s\n", p, tomlKey(n.key), scalar(n.val, tomlKind))
}

type kind int

const (
	yamlKind kind = iota
	tomlKind
)

func scalar(v any, k kind) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	panic(fmt.Sprintf("BUG: generate: value of type %T", v))
}

// quote writes a double-quoted string both YAML and TOML read the same
// way: only \\, \" and \uXXXX escapes, which both define.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfeff || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var (
	bareYAMLKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	bareTOMLKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	// YAML 1.1 words a plain scalar would turn into a boolean or null.
	yamlWords = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true,
		"true": true, "false": true, "null": true}
)

func yamlKey(k string) string {
	if bareYAMLKey.MatchString(k) && !yamlWords[strings.ToLower(k)] {
		return k
	}
	return quote(k)
}

func tomlKey(k string) string {
	if bareTOMLKey.MatchString(k) {
		return k
	}
	return quote(k)
}
