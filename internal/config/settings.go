package config

import (
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Mask replaces secrets in Settings and Redacted.
const Mask = "********"

// Setting is one row of the admin console's SHOW CONFIG.
type Setting struct {
	Key   string // "port", "prometheus.port"
	Value string
}

// Settings lists the general keys in documented order followed by the
// prometheus keys, with secrets masked. Durations are rendered in
// milliseconds, the seconds-valued TCP keys in seconds, sizes in bytes,
// lists comma-separated.
func (c *Config) Settings() []Setting {
	out := appendSettings(nil, "", &c.General)
	out = append(out, Setting{Key: "pg_hba", Value: pgHbaSetting(c.General.PgHba)})
	return appendSettings(out, "prometheus.", &c.Prometheus)
}

func appendSettings(out []Setting, prefix string, src any) []Setting {
	v := reflect.ValueOf(src).Elem()
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if f.custom {
			continue
		}
		if fv.Kind() == reflect.Struct {
			out = appendSettings(out, prefix+f.key+".", fv.Addr().Interface())
			continue
		}
		val := formatValue(fv, f)
		if f.secret && val != "" {
			val = Mask
		}
		out = append(out, Setting{Key: prefix + f.key, Value: val})
	}
	return out
}

func formatValue(fv reflect.Value, f field) string {
	switch {
	case fv.Type() == durationType && f.seconds:
		return strconv.FormatInt(int64(fv.Interface().(time.Duration)/time.Second), 10)
	case fv.Type() == durationType:
		return strconv.FormatInt(fv.Interface().(time.Duration).Milliseconds(), 10)
	case fv.Kind() == reflect.Slice:
		return strings.Join(fv.Interface().([]string), ",")
	case fv.Kind() == reflect.String:
		return fv.String()
	case fv.Kind() == reflect.Bool:
		return strconv.FormatBool(fv.Bool())
	}
	return strconv.FormatInt(fv.Int(), 10) // int, ByteSize
}

func pgHbaSetting(h PgHba) string {
	switch {
	case h.Path != "":
		return h.Path
	case h.Content != "":
		return "<inline>"
	}
	return ""
}

// Redacted returns a deep copy of c with every password and verifier
// replaced by Mask (empty ones stay empty), for logs and admin output.
func (c *Config) Redacted() *Config {
	r := *c
	r.General = c.General
	r.General.Hba = clone(c.General.Hba)
	r.General.PatroniAPIURLs = clone(c.General.PatroniAPIURLs)
	r.General.Talos = Talos{Keys: clone(c.General.Talos.Keys), Databases: clone(c.General.Talos.Databases)}
	mask(&r.General.AdminPassword)
	r.Pools = make(map[string]*Pool, len(c.Pools))
	for name, p := range c.Pools {
		cp := *p
		cp.PatroniAPIURLs = clone(p.PatroniAPIURLs)
		cp.Users = clone(p.Users)
		for i := range cp.Users {
			mask(&cp.Users[i].Password)
			mask(&cp.Users[i].ServerPassword)
		}
		if p.AuthQuery != nil {
			aq := *p.AuthQuery
			mask(&aq.Password)
			mask(&aq.ServerPassword)
			cp.AuthQuery = &aq
		}
		r.Pools[name] = &cp
	}
	return &r
}

func mask(s *string) {
	if *s != "" {
		*s = Mask
	}
}

func clone[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append([]T(nil), s...)
}
