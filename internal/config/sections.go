package config

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// decodeGeneral applies the keys of one file's general section over g.
// dir is that file's directory (for pg_hba.path). It returns the keys set.
func (d *decoder) decodeGeneral(m map[string]any, dir string, g *General) map[string]bool {
	custom, present := d.decodeFields("general", m, g)
	if raw, ok := custom["hba"]; ok {
		_, pgHbaToo := custom["pg_hba"]
		d.decodeHba(raw, dir, g, pgHbaToo)
	}
	if raw, ok := custom["pg_hba"]; ok {
		if h, ok := d.decodePgHba("general.pg_hba", raw, dir); ok {
			g.PgHba = h
		}
	}
	return present
}

// decodeHba takes general.hba in both of the seed's meanings: a list of
// addresses (the legacy allow list, its reference) or pg_hba rules in any
// of general.pg_hba's forms (text, {path}, {content}), as its pg_hba page
// writes them. Rules given so are general.pg_hba's; with general.pg_hba in
// the same file too they are an error, as the seed says of setting both.
func (d *decoder) decodeHba(raw any, dir string, g *General, pgHbaToo bool) {
	if _, list := raw.([]any); list {
		if l, ok := d.strList("general.hba", raw); ok {
			g.Hba = l
		}
		return
	}
	_, text := raw.(string)
	if _, table := asMap(raw); !text && !table {
		d.failf("general.hba", "must be a list of addresses, or pg_hba rules as text or a table with path or content, got %s", typeName(raw))
		return
	}
	if pgHbaToo {
		d.failf("general.hba", "pg_hba rules are set in general.pg_hba as well; keep one of the two keys")
		return
	}
	if h, ok := d.decodePgHba("general.hba", raw, dir); ok {
		g.PgHba = h
	}
}

// decodePgHba accepts the three documented forms: inline text,
// {path = "..."} (relative to the config file) and {content = "..."}.
func (d *decoder) decodePgHba(key string, raw any, dir string) (PgHba, bool) {
	if s, ok := raw.(string); ok {
		return PgHba{Content: s, Key: key}, true
	}
	m, ok := asMap(raw)
	if !ok {
		d.failf(key, "must be a string or a table with path or content, got %s", typeName(raw))
		return PgHba{}, false
	}
	var spec struct {
		Path    string `cfg:"path"`
		Content string `cfg:"content"`
	}
	before := len(d.errs)
	_, present := d.decodeFields(key, m, &spec)
	if len(d.errs) > before {
		return PgHba{}, false
	}
	switch {
	case present["path"] && present["content"]:
		d.failf(key, "set either path or content, not both")
	case present["content"]:
		return PgHba{Content: spec.Content, Key: key}, true
	case present["path"] && spec.Path != "":
		p := spec.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			d.fail(key+".path", fmt.Errorf("read pg_hba file: %w", err))
			return PgHba{}, false
		}
		return PgHba{Path: p, Content: string(b), Key: key}, true
	default:
		d.failf(key, "must set path or content")
	}
	return PgHba{}, false
}

// decodePool decodes pools.<name>. Inheritable settings start from g;
// lifetimeSet says whether general.fallback_lifetime was given explicitly.
func (d *decoder) decodePool(name string, raw any, g *General, lifetimeSet bool) *Pool {
	key := "pools." + name
	p := NewPool(name, g)
	m, ok := asMap(raw)
	if !ok {
		d.failf(key, "must be a table/mapping, got %s", typeName(raw))
		return p
	}
	custom, present := d.decodeFields(key, m, p)
	if !present["fallback_lifetime"] && !lifetimeSet && present["fallback_cooldown"] {
		p.FallbackLifetime = p.FallbackCooldown
	}
	if p.ServerDatabase == "" { // explicitly set to ""
		p.ServerDatabase = name
	}
	if raw, ok := custom["auth_query"]; ok {
		p.AuthQuery = d.decodeAuthQuery(key+".auth_query", raw, name)
	}
	if raw, ok := custom["users"]; ok {
		p.Users = d.decodeUsers(key+".users", raw, p)
	}
	return p
}

func (d *decoder) decodeAuthQuery(key string, raw any, pool string) *AuthQuery {
	aq := defaultAuthQuery(pool)
	m, ok := asMap(raw)
	if !ok {
		d.failf(key, "must be a table/mapping, got %s", typeName(raw))
		return aq
	}
	d.decodeFields(key, m, aq)
	if aq.Database == "" {
		aq.Database = pool
	}
	return aq
}

// decodeUsers accepts a list (YAML, TOML [[pools.x.users]]) or the legacy
// table form [pools.x.users.0], ordered by key (numerically when possible).
func (d *decoder) decodeUsers(key string, raw any, p *Pool) []User {
	type entry struct {
		key string
		raw any
	}
	var entries []entry
	if l, ok := raw.([]any); ok {
		for i, e := range l {
			entries = append(entries, entry{fmt.Sprintf("%s[%d]", key, i), e})
		}
	} else if m, ok := asMap(raw); ok {
		keys := sortedKeys(m)
		slices.SortStableFunc(keys, func(a, b string) int {
			x, errA := strconv.Atoi(a)
			y, errB := strconv.Atoi(b)
			switch {
			case errA == nil && errB == nil:
				return cmp.Compare(x, y)
			case errA == nil:
				return -1 // numeric keys first
			case errB == nil:
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, k := range keys {
			entries = append(entries, entry{key + "." + k, m[k]})
		}
	} else {
		d.failf(key, "must be a list of users, got %s", typeName(raw))
		return nil
	}
	users := make([]User, 0, len(entries))
	for _, e := range entries {
		u := NewUser(p, "")
		m, ok := asMap(e.raw)
		if !ok {
			d.failf(e.key, "must be a table/mapping, got %s", typeName(e.raw))
			continue
		}
		d.decodeFields(e.key, m, &u)
		users = append(users, u)
	}
	return users
}
