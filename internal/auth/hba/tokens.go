package hba

import (
	"errors"
	"strings"
)

// item is one element of a field: `a,"b c"` is a field of two items.
type item struct {
	text   string
	quoted bool // some part was double-quoted: keywords lose their meaning
}

// field is one whitespace-separated column of a line.
type field []item

// tokenize splits one line into fields the way PostgreSQL's hba tokenizer
// does: whitespace separates fields, commas separate list items (spaces
// after a comma are allowed), double quotes protect spaces, commas and '#'
// and "" inside quotes is a literal quote, '#' outside quotes starts a
// comment.
func tokenize(line string) ([]field, error) {
	var (
		fields []field
		cur    field
		buf    strings.Builder
		quoted bool // current item had quotes
		inQ    bool // inside quotes now
		inItem bool // current item has started
		comma  bool // last item ended with a comma: the field continues
	)
	endItem := func() {
		cur = append(cur, item{text: buf.String(), quoted: quoted})
		buf.Reset()
		quoted, inItem = false, false
	}
	endField := func() {
		fields = append(fields, cur)
		cur = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQ && c == '"' && i+1 < len(line) && line[i+1] == '"':
			buf.WriteByte('"')
			i++
		case c == '"':
			inQ, quoted, inItem = !inQ, true, true
		case inQ:
			buf.WriteByte(c)
		case c == '#':
			i = len(line)
		case c == ' ' || c == '\t' || c == '\r':
			if inItem {
				endItem()
				comma = false
			}
			if !comma && cur != nil {
				endField()
			}
		case c == ',':
			if !inItem {
				return nil, errors.New("empty list element")
			}
			endItem()
			comma = true
		default:
			buf.WriteByte(c)
			inItem = true
		}
	}
	if inQ {
		return nil, errors.New("unterminated quoted string")
	}
	if inItem {
		endItem()
	} else if comma {
		return nil, errors.New("list ends with a comma")
	}
	if cur != nil {
		endField()
	}
	return fields, nil
}

// keyword reports whether the field is exactly the unquoted word kw.
func (f field) keyword(kw string) bool {
	return len(f) == 1 && !f[0].quoted && f[0].text == kw
}

// single returns the only item of a field that must not be a list.
func (f field) single() (item, error) {
	if len(f) != 1 {
		return item{}, errors.New("a list is not allowed here")
	}
	return f[0], nil
}

// entry encodes an item as stored in Rule.Databases / Rule.Users: quoted
// items stay quoted, in pg_hba syntax, so that `"all"` remains a name.
func (it item) entry() string {
	if !it.quoted {
		return it.text
	}
	return `"` + strings.ReplaceAll(it.text, `"`, `""`) + `"`
}

// literal decodes an entry: the name it stands for, and whether it was
// quoted (a quoted entry is never a keyword).
func literal(entry string) (name string, quoted bool) {
	if len(entry) >= 2 && entry[0] == '"' && entry[len(entry)-1] == '"' {
		return strings.ReplaceAll(entry[1:len(entry)-1], `""`, `"`), true
	}
	return entry, false
}
