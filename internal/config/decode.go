package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KeyError is one configuration problem. Its message starts with the full
// key path, e.g. "pools.mydb.users[0].pool_sise: unknown key".
type KeyError struct {
	Key  string // full key path
	File string // set for problems found in an included file
	Err  error
}

func (e *KeyError) Error() string {
	if e.File != "" {
		return e.Key + ": " + e.Err.Error() + " (in " + e.File + ")"
	}
	return e.Key + ": " + e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }

// ErrUnknownKey is wrapped by every "unknown key" KeyError.
var ErrUnknownKey = errors.New("unknown key")

// envValue is a scalar that came from an environment variable: always a
// string, converted to the field's type when decoded.
type envValue string

// decoder collects every problem of one load instead of stopping at the first.
type decoder struct {
	file string // included file being decoded, "" for the main file
	// lenient skips refuseUnimplemented; only tests set it, to check that
	// every documented key still decodes.
	lenient bool
	errs    []error
}

func (d *decoder) fail(key string, err error) {
	d.errs = append(d.errs, &KeyError{Key: key, File: d.file, Err: err})
}

func (d *decoder) failf(key, format string, args ...any) {
	d.fail(key, fmt.Errorf(format, args...))
}

// field describes one struct field tagged `cfg:"key[,opt...]"`.
type field struct {
	key     string
	index   int
	seconds bool // integer seconds instead of a human duration
	secret  bool // masked in Settings and Redacted
	custom  bool // decoded by the caller
}

func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("cfg")
		if tag == "" || tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		f := field{key: parts[0], index: i}
		for _, opt := range parts[1:] {
			switch opt {
			case "seconds":
				f.seconds = true
			case "secret":
				f.secret = true
			case "custom":
				f.custom = true
			}
		}
		out = append(out, f)
	}
	return out
}

// Field is one config key of a struct type, as its `cfg` tag declares it:
// what tools outside this package (pg_doorman generate) need to walk the
// keys the decoder knows.
type Field struct {
	Key     string
	Index   int  // struct field index
	Seconds bool // integer seconds instead of a human duration
	Custom  bool // decoded by the caller (sections, users, auth_query, pg_hba)
}

// Fields lists the config keys of struct type t in field order.
func Fields(t reflect.Type) []Field {
	fs := fieldsOf(t)
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = Field{Key: f.key, Index: f.index, Seconds: f.seconds, Custom: f.custom}
	}
	return out
}

// decodeFields decodes the known keys of m into the struct dst points to and
// reports unknown keys. Values of fields tagged "custom" are returned for the
// caller to decode; present lists every known key found in m.
func (d *decoder) decodeFields(path string, m map[string]any, dst any) (custom map[string]any, present map[string]bool) {
	v := reflect.ValueOf(dst).Elem()
	byKey := map[string]field{}
	for _, f := range fieldsOf(v.Type()) {
		byKey[f.key] = f
	}
	custom, present = map[string]any{}, map[string]bool{}
	for _, k := range sortedKeys(m) {
		f, ok := byKey[k]
		if !ok {
			d.fail(join(path, k), ErrUnknownKey)
			continue
		}
		if m[k] == nil {
			continue // YAML null: keep the default, like an absent key
		}
		present[k] = true
		if f.custom {
			custom[k] = m[k]
			continue
		}
		d.decodeValue(join(path, k), m[k], v.Field(f.index), f)
	}
	return custom, present
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
)

func (d *decoder) decodeValue(key string, raw any, fv reflect.Value, f field) {
	switch {
	case fv.Type() == durationType && f.seconds:
		if n, ok := d.integer(key, raw); ok {
			if n < 0 || n > math.MaxInt64/int64(time.Second) {
				d.failf(key, "must be between 0 and %d seconds", math.MaxInt64/int64(time.Second))
				return
			}
			fv.SetInt(n * int64(time.Second))
		}
	case fv.Type() == durationType:
		if dur, ok := d.duration(key, raw); ok {
			fv.SetInt(int64(dur))
		}
	case fv.Type() == byteSizeType:
		if n, ok := d.byteSize(key, raw); ok {
			fv.SetInt(int64(n))
		}
	case fv.Kind() == reflect.String:
		if s, ok := d.str(key, raw); ok {
			fv.SetString(s)
		}
	case fv.Kind() == reflect.Int:
		if n, ok := d.integer(key, raw); ok {
			fv.SetInt(n)
		}
	case fv.Kind() == reflect.Bool:
		if b, ok := d.boolean(key, raw); ok {
			fv.SetBool(b)
		}
	case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
		if l, ok := d.strList(key, raw); ok {
			fv.Set(reflect.ValueOf(l))
		}
	case fv.Kind() == reflect.Struct:
		m, ok := asMap(raw)
		if !ok {
			d.failf(key, "must be a table/mapping, got %s", typeName(raw))
			return
		}
		d.decodeFields(key, m, fv.Addr().Interface())
	default:
		panic("BUG: config field " + key + " has unsupported type " + fv.Type().String())
	}
}

func (d *decoder) str(key string, raw any) (string, bool) {
	switch s := raw.(type) {
	case string:
		return s, true
	case envValue:
		return string(s), true
	}
	d.failf(key, "must be a string, got %s", typeName(raw))
	return "", false
}

func (d *decoder) boolean(key string, raw any) (bool, bool) {
	switch b := raw.(type) {
	case bool:
		return b, true
	case envValue:
		v, err := strconv.ParseBool(string(b))
		if err != nil {
			d.failf(key, "must be true or false, got %q", string(b))
			return false, false
		}
		return v, true
	}
	d.failf(key, "must be true or false, got %s", typeName(raw))
	return false, false
}

func (d *decoder) integer(key string, raw any) (int64, bool) {
	switch n := raw.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), true
		}
	case envValue:
		v, err := strconv.ParseInt(strings.TrimSpace(string(n)), 10, 64)
		if err == nil {
			return v, true
		}
	}
	d.failf(key, "must be an integer, got %s", typeName(raw))
	return 0, false
}

func (d *decoder) duration(key string, raw any) (time.Duration, bool) {
	switch v := raw.(type) {
	case string:
		return d.parseDuration(key, v)
	case envValue:
		return d.parseDuration(key, string(v))
	}
	if _, isBool := raw.(bool); !isBool {
		if n, ok := numeric(raw); ok {
			if n < 0 {
				d.fail(key, errNegative)
				return 0, false
			}
			if n > math.MaxInt64/int64(time.Millisecond) {
				d.failf(key, "duration %d ms out of range", n)
				return 0, false
			}
			return time.Duration(n) * time.Millisecond, true
		}
	}
	d.failf(key, "must be milliseconds or a duration string like \"5s\", got %s", typeName(raw))
	return 0, false
}

func (d *decoder) byteSize(key string, raw any) (ByteSize, bool) {
	switch v := raw.(type) {
	case string:
		return d.parseSize(key, v)
	case envValue:
		return d.parseSize(key, string(v))
	}
	if _, isBool := raw.(bool); !isBool {
		if n, ok := numeric(raw); ok {
			if n < 0 {
				d.fail(key, errNegative)
				return 0, false
			}
			return ByteSize(n), true
		}
	}
	d.failf(key, "must be bytes or a size string like \"1MB\", got %s", typeName(raw))
	return 0, false
}

func (d *decoder) parseDuration(key, s string) (time.Duration, bool) {
	v, err := ParseDuration(s)
	if err != nil {
		d.fail(key, err)
		return 0, false
	}
	return v, true
}

func (d *decoder) parseSize(key, s string) (ByteSize, bool) {
	v, err := ParseByteSize(s)
	if err != nil {
		d.fail(key, err)
		return 0, false
	}
	return v, true
}

func (d *decoder) strList(key string, raw any) ([]string, bool) {
	l, ok := raw.([]any)
	if !ok {
		d.failf(key, "must be a list of strings, got %s", typeName(raw))
		return nil, false
	}
	out := make([]string, 0, len(l))
	good := true
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			d.failf(fmt.Sprintf("%s[%d]", key, i), "must be a string, got %s", typeName(e))
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

// numeric returns an integer from the types YAML and TOML decoders produce
// (floats are rejected: every numeric key is integral).
func numeric(raw any) (int64, bool) {
	switch n := raw.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		return int64(n), n <= math.MaxInt64
	}
	return 0, false
}

// asMap accepts both map[string]any and the map[any]any YAML produces for
// mappings with non-string keys (e.g. a database named 123).
func asMap(raw any) (map[string]any, bool) {
	switch m := raw.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	return nil, false
}

func typeName(raw any) string {
	switch raw.(type) {
	case nil:
		return "null"
	case string, envValue:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64:
		return "an integer"
	case float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a table/mapping"
	}
	return fmt.Sprintf("%T", raw)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
