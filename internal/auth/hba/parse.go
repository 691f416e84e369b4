package hba

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Connection types (the first column).
const (
	TypeLocal     = "local"
	TypeHost      = "host"
	TypeHostSSL   = "hostssl"
	TypeHostNoSSL = "hostnossl"
)

// ParseError is one bad line.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("pg_hba line %d: %s", e.Line, e.Msg) }

// Parse reads pg_hba.conf text. Every bad line is reported (errors.Join of
// *ParseError); on error the returned Rules is nil.
func Parse(content string) (*Rules, error) {
	rules := &Rules{}
	var errs []error
	for i, line := range strings.Split(content, "\n") {
		rule, ok, err := parseLine(line)
		if err != nil {
			errs = append(errs, &ParseError{Line: i + 1, Msg: err.Error()})
			continue
		}
		if ok {
			rule.Line = i + 1
			rules.Rules = append(rules.Rules, rule)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

// parseLine returns ok == false for blank and comment-only lines.
func parseLine(line string) (Rule, bool, error) {
	fields, err := tokenize(line)
	if err != nil || len(fields) == 0 {
		return Rule{}, false, err
	}
	var r Rule
	typ, err := fields[0].single()
	if err != nil || typ.quoted {
		return r, false, errors.New("invalid connection type")
	}
	switch typ.text {
	case TypeLocal, TypeHost, TypeHostSSL, TypeHostNoSSL:
		r.Type = typ.text
	default:
		return r, false, fmt.Errorf("unsupported connection type %q", typ.text)
	}
	if len(fields) < 4 {
		return r, false, errors.New("end of line before the user field")
	}
	if r.Databases, err = parseNames(fields[1], true); err != nil {
		return r, false, fmt.Errorf("database: %w", err)
	}
	if r.Users, err = parseNames(fields[2], false); err != nil {
		return r, false, fmt.Errorf("user: %w", err)
	}
	rest := fields[3:]
	if r.Type != TypeLocal {
		if rest, err = r.parseAddress(rest); err != nil {
			return r, false, fmt.Errorf("address: %w", err)
		}
	}
	if len(rest) == 0 {
		return r, false, errors.New("end of line before the authentication method")
	}
	method, err := rest[0].single()
	if err != nil || method.quoted || method.text == "" {
		return r, false, errors.New("invalid authentication method")
	}
	r.MethodName = method.text
	r.Method = ParseMethod(method.text)
	return r, true, nil // options after the method are ignored
}

func parseNames(f field, database bool) ([]string, error) {
	out := make([]string, 0, len(f))
	for _, it := range f {
		if it.text == "" {
			return nil, errors.New("empty name")
		}
		if !it.quoted {
			if err := checkUnquoted(it.text, database); err != nil {
				return nil, err
			}
		}
		out = append(out, it.entry())
	}
	return out, nil
}

func checkUnquoted(s string, database bool) error {
	switch {
	case strings.HasPrefix(s, "+"):
		return fmt.Errorf("group membership %q is not supported", s)
	case strings.HasPrefix(s, "@"):
		return fmt.Errorf("file inclusion %q is not supported", s)
	case strings.HasPrefix(s, "/"):
		return fmt.Errorf("regular expression %q is not supported", s)
	case database && (s == "samerole" || s == "samegroup"):
		return fmt.Errorf("%q is not supported", s)
	case !database && s == "sameuser":
		return errors.New(`"sameuser" is only valid in the database field`)
	}
	return nil
}

// parseAddress consumes the address (and netmask) fields of a host rule.
func (r *Rule) parseAddress(fields []field) ([]field, error) {
	if len(fields) == 0 {
		return nil, errors.New("end of line before the address")
	}
	it, err := fields[0].single()
	if err != nil {
		return nil, err
	}
	if !it.quoted {
		switch it.text {
		case "all":
			r.AllAddrs = true
			return fields[1:], nil
		case "samehost", "samenet":
			return nil, fmt.Errorf("%q is not supported", it.text)
		}
	}
	if strings.Contains(it.text, "/") {
		p, err := netip.ParsePrefix(it.text)
		if err != nil {
			return nil, fmt.Errorf("invalid CIDR %q: %w", it.text, err)
		}
		r.Prefix = normalizePrefix(p)
		return fields[1:], nil
	}
	addr, err := netip.ParseAddr(it.text)
	if err != nil || addr.Zone() != "" {
		return nil, fmt.Errorf("%q is not an IP address or CIDR (host names are not supported)", it.text)
	}
	if len(fields) < 2 {
		return nil, errors.New("an address without /bits needs a netmask field")
	}
	bits, err := maskBits(addr, fields[1])
	if err != nil {
		return nil, err
	}
	r.Prefix = normalizePrefix(netip.PrefixFrom(addr, bits))
	return fields[2:], nil
}

// maskBits converts a netmask field ("255.255.255.0") to a prefix length.
func maskBits(addr netip.Addr, f field) (int, error) {
	it, err := f.single()
	if err != nil {
		return 0, err
	}
	mask, err := netip.ParseAddr(it.text)
	if err != nil || mask.Is4() != addr.Is4() || mask.Zone() != "" {
		return 0, fmt.Errorf("invalid netmask %q for %s", it.text, addr)
	}
	bits, contiguous := 0, true
	for _, b := range mask.AsSlice() {
		for bit := 7; bit >= 0; bit-- {
			set := b&(1<<bit) != 0
			switch {
			case set && !contiguous:
				return 0, fmt.Errorf("netmask %q is not contiguous", it.text)
			case set:
				bits++
			default:
				contiguous = false
			}
		}
	}
	return bits, nil
}

// normalizePrefix masks host bits and turns ::ffff:a.b.c.d/n (n >= 96) into
// a.b.c.d/(n-96), so that rules match the unmapped client addresses Match
// compares against.
func normalizePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}
