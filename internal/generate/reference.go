package generate

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/doorman-go/doorman/internal/config"
)

// Example names of the reference file.
const (
	exampleDB       = "exampledb"
	exampleUser     = "doorman"
	exampleVerifier = "md5a8d9e6f6bd7b4a1d9e2c2a5e9bb3c5f1" // placeholder, not anyone's password
	exampleHba      = "host all all 127.0.0.1/32 md5"
	exampleQuery    = "SELECT usename, passwd FROM pg_shadow WHERE usename = $1"
)

// inherited keys are written commented out in the reference: their default
// is another key's value (shown as it resolves), and writing it would stop
// the inheritance. pg_hba and auth_query have no default: they show an
// example.
var inherited = map[string]bool{
	"general.fallback_lifetime":      true,
	"general.pg_hba":                 true,
	"pools.server_database":          true,
	"pools.connect_timeout":          true,
	"pools.idle_timeout":             true,
	"pools.server_lifetime":          true,
	"pools.scaling_warm_pool_ratio":  true,
	"pools.scaling_fast_retries":     true,
	"pools.patroni_api_urls":         true,
	"pools.fallback_cooldown":        true,
	"pools.patroni_api_timeout":      true,
	"pools.fallback_connect_timeout": true,
	"pools.fallback_lifetime":        true,
	"pools.auth_query":               true,
	"pools.users.server_lifetime":    true,
	"pools.users.pool_mode":          true,
}

// Reference writes every key the config accepts with its documented
// default and a comment, with one example pool and user, without
// connecting anywhere. Keys refused at load when changed
// (config.ErrNotImplemented) are written at their default, so the file
// loads as written.
func Reference(w io.Writer, f Format, c Comments) error {
	header := strings.Join(nonEmpty(c.text("reference"), c.text("reference.example"), c.text("reference.off")), "\n")
	return write(w, f, header, referenceNodes(c, false))
}

// referenceNodes builds the reference document; activate writes the
// commented-out keys as real ones (tests load that too).
func referenceNodes(c Comments, activate bool) []*node {
	r := refBuilder{c: c, activate: activate}
	def := config.Default()
	g := def.General
	pool := config.NewPool(exampleDB, &g)
	user := config.NewUser(pool, exampleUser)
	user.Password = exampleVerifier
	// The auth_query defaults of config.defaultAuthQuery; a test checks
	// that they load as the config's own.
	aq := config.AuthQuery{
		Query: exampleQuery, User: "doorman_auth", Database: exampleDB,
		Workers: config.DefaultAuthQueryWorkers, PoolSize: config.DefaultUserPoolSize,
		CacheTTL: time.Hour, CacheFailureTTL: 30 * time.Second, MinInterval: time.Second,
	}
	r.custom = map[string]func(string) *node{
		"general.pg_hba": func(p string) *node { return r.mark(p, leaf("pg_hba", exampleHba, c.key(p))) },
		// general.hba also takes pg_hba's forms; the reference shows its
		// list form, as the seed's settings reference does.
		"general.hba": func(p string) *node {
			return r.mark(p, leaf("hba", value(reflect.ValueOf(g.Hba), config.Field{Key: "hba"}), c.key(p)))
		},
		"pools.auth_query": func(p string) *node {
			return r.mark(p, table("auth_query", c.key(p), r.fields("pools.auth_query", &aq)...))
		},
		"pools.users": func(p string) *node {
			return &node{key: "users", comment: c.key(p), isItems: true, items: [][]*node{r.fields("pools.users", &user)}}
		},
	}
	inc := struct {
		Files []string `cfg:"files"`
	}{Files: []string{}}
	return []*node{
		table("general", c.text("general"), r.fields("general", &g)...),
		table("pools", c.text("pools"), table(exampleDB, "", r.fields("pools", pool)...)),
		table("prometheus", c.text("prometheus"), r.fields("prometheus", &def.Prometheus)...),
		table("include", c.text("include"), r.fields("include", &inc)...),
	}
}

type refBuilder struct {
	c        Comments
	activate bool
	custom   map[string]func(path string) *node // fields tagged custom
}

func (r refBuilder) mark(path string, n *node) *node {
	n.off = inherited[path] && !r.activate
	return n
}

// fields turns the cfg-tagged fields of the struct src points to into
// nodes, in declaration order (the settings reference order).
func (r refBuilder) fields(prefix string, src any) []*node {
	v := reflect.ValueOf(src).Elem()
	var out []*node
	for _, f := range config.Fields(v.Type()) {
		path := prefix + "." + f.Key
		fv := v.Field(f.Index)
		switch {
		case f.Custom:
			build, ok := r.custom[path]
			if !ok {
				panic("BUG: generate: no reference builder for custom key " + path)
			}
			out = append(out, build(path))
		case fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeFor[time.Duration]():
			out = append(out, r.mark(path, table(f.Key, r.c.key(path), r.fields(path, fv.Addr().Interface())...)))
		default:
			out = append(out, r.mark(path, leaf(f.Key, value(fv, f), r.c.key(path))))
		}
	}
	return out
}

// value renders a field the way the config file spells it: durations as
// "5s"/"10m" (integer seconds for the seconds-valued TCP keys), sizes as
// "1MB", lists as lists.
func value(fv reflect.Value, f config.Field) any {
	switch {
	case fv.Type() == reflect.TypeFor[time.Duration]():
		d := time.Duration(fv.Int())
		if f.Seconds {
			return int64(d / time.Second)
		}
		return durationString(d)
	case fv.Type() == reflect.TypeFor[config.ByteSize]():
		return sizeString(fv.Int())
	case fv.Kind() == reflect.String:
		return fv.String()
	case fv.Kind() == reflect.Int:
		return fv.Int()
	case fv.Kind() == reflect.Bool:
		return fv.Bool()
	case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
		return append([]string{}, fv.Interface().([]string)...)
	}
	panic(fmt.Sprintf("BUG: generate: config key %s has unsupported type %s", f.Key, fv.Type()))
}

// durationString is d in the largest unit that divides it; 0 stays the
// integer 0 (milliseconds).
func durationString(d time.Duration) any {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}}
	if d == 0 {
		return int64(0)
	}
	for _, u := range units {
		if d%u.unit == 0 {
			return fmt.Sprintf("%d%s", d/u.unit, u.suffix)
		}
	}
	return int64(d / time.Millisecond) // sub-millisecond parts cannot be written
}

func sizeString(n int64) any {
	units := []struct {
		suffix string
		unit   int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}}
	if n == 0 {
		return int64(0)
	}
	for _, u := range units {
		if n%u.unit == 0 {
			return fmt.Sprintf("%d%s", n/u.unit, u.suffix)
		}
	}
	return n
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
