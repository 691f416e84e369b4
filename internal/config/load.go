package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// EnvPrefix prefixes environment overrides of scalar general and
// prometheus keys: PG_DOORMAN_GENERAL_ADMIN_PASSWORD, PG_DOORMAN_PROMETHEUS_PORT.
const EnvPrefix = "PG_DOORMAN"

var topLevelKeys = map[string]bool{"general": true, "pools": true, "prometheus": true, "include": true}

// document is one parsed config file, seen twice: through viper (sections
// other than pools; viper folds keys to lower case) and raw (case kept).
type document struct {
	path string
	dir  string
	v    *viper.Viper
	raw  map[string]any
}

// section returns a non-pool section of doc as viper decoded it, nil when
// absent.
func (d *decoder) section(doc *document, name string) map[string]any {
	raw := doc.v.Get(name)
	if raw == nil {
		return nil
	}
	m, ok := asMap(raw)
	if !ok {
		d.failf(name, "must be a table/mapping, got %s", typeName(raw))
	}
	return m
}

// Load reads the config file at path (format chosen by extension: .yaml,
// .yml or .toml), its include.files, and environment overrides; applies
// defaults; resolves inheritance; validates. Every problem is returned at
// once (errors.Join of *KeyError); warnings are returned even on success.
//
// A documented key set to a value whose behaviour pg_doorman lacks is an
// error wrapping ErrNotImplemented (see refuseUnimplemented).
func Load(path string) (*Config, []string, error) {
	return load(path, &decoder{})
}

func load(path string, d *decoder) (*Config, []string, error) {
	doc, err := readDocument(path)
	if err != nil {
		return nil, nil, err
	}
	docs := []*document{doc}
	d.checkDocument(doc)
	for i, inc := range d.includeFiles(doc) {
		key := fmt.Sprintf("include.files[%d]", i)
		p := inc
		if !filepath.IsAbs(p) {
			p = filepath.Join(doc.dir, p)
		}
		incDoc, err := readDocument(p)
		if err != nil {
			d.fail(key, err)
			continue
		}
		d.file = p
		d.checkDocument(incDoc)
		if _, ok := incDoc.raw["include"]; ok {
			d.failf("include", "nested include is not supported")
		}
		d.file = ""
		docs = append(docs, incDoc)
	}
	cfg := Default()
	cfg.Path = path
	d.decodeDocuments(cfg, docs)
	warnings := d.validate(cfg)
	if len(d.errs) > 0 {
		return nil, warnings, errors.Join(d.errs...)
	}
	return cfg, warnings, nil
}

// decodeDocuments applies general and prometheus from every document in
// order (later files override earlier ones), then the environment, then
// decodes the pools, which may not repeat across files.
func (d *decoder) decodeDocuments(cfg *Config, docs []*document) {
	lifetimeSet := false
	for i, doc := range docs {
		d.file = fileLabel(i, doc)
		if m := d.section(doc, "general"); m != nil {
			lifetimeSet = d.decodeGeneral(m, doc.dir, &cfg.General)["fallback_lifetime"] || lifetimeSet
		}
		if m := d.section(doc, "prometheus"); m != nil {
			d.decodeFields("prometheus", m, &cfg.Prometheus)
		}
	}
	d.file = "environment"
	lifetimeSet = d.decodeGeneral(envOverrides("general", &cfg.General), "", &cfg.General)["fallback_lifetime"] || lifetimeSet
	d.decodeFields("prometheus", envOverrides("prometheus", &cfg.Prometheus), &cfg.Prometheus)
	if !lifetimeSet {
		cfg.General.FallbackLifetime = cfg.General.FallbackCooldown
	}
	resolveParallelCreates(&cfg.General)
	origin := map[string]string{}
	for i, doc := range docs {
		d.file = fileLabel(i, doc)
		raw, ok := doc.raw["pools"]
		if !ok || raw == nil {
			continue
		}
		pools, ok := asMap(raw)
		if !ok {
			d.failf("pools", "must be a table/mapping, got %s", typeName(raw))
			continue
		}
		for _, name := range sortedKeys(pools) {
			if prev, dup := origin[name]; dup {
				d.failf("pools."+name, "defined in both %s and %s", prev, doc.path)
				continue
			}
			origin[name] = doc.path
			cfg.Pools[name] = d.decodePool(name, pools[name], &cfg.General, lifetimeSet)
		}
	}
	d.file = ""
}

func fileLabel(i int, doc *document) string {
	if i == 0 {
		return ""
	}
	return doc.path
}

// checkDocument reports unknown top-level keys and, outside pools, keys
// that viper would silently fold to lower case.
func (d *decoder) checkDocument(doc *document) {
	for _, k := range sortedKeys(doc.raw) {
		if !topLevelKeys[k] {
			d.fail(k, ErrUnknownKey)
			continue
		}
		if k != "pools" {
			d.checkLowerCase(k, doc.raw[k])
		}
	}
}

func (d *decoder) checkLowerCase(path string, raw any) {
	m, ok := asMap(raw)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		if k != strings.ToLower(k) {
			d.fail(join(path, k), ErrUnknownKey)
			continue
		}
		d.checkLowerCase(join(path, k), m[k])
	}
}

func (d *decoder) includeFiles(doc *document) []string {
	var inc struct {
		Files []string `cfg:"files"`
	}
	if m := d.section(doc, "include"); m != nil {
		d.decodeFields("include", m, &inc)
	}
	return inc.Files
}

// envOverrides returns the scalar keys of section set through environment
// variables (EnvPrefix_SECTION_KEY), read with viper's AutomaticEnv.
func envOverrides(section string, dst any) map[string]any {
	ev := viper.New()
	ev.SetEnvPrefix(EnvPrefix)
	ev.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	ev.AutomaticEnv()
	out := map[string]any{}
	t := reflect.TypeOf(dst).Elem()
	for _, f := range fieldsOf(t) {
		kind := t.Field(f.index).Type.Kind()
		if f.custom || kind == reflect.Slice || kind == reflect.Struct {
			continue
		}
		if key := section + "." + f.key; ev.IsSet(key) {
			out[f.key] = envValue(ev.GetString(key))
		}
	}
	return out
}

// readDocument reads path once and parses it twice: with viper (sections
// other than pools) and raw with key case preserved (pools are database
// names, which are case-sensitive; viper lower-cases map keys).
func readDocument(path string) (*document, error) {
	kind, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	v := viper.New()
	v.SetConfigType(kind)
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	raw, err := parseRaw(kind, b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &document{path: path, dir: filepath.Dir(path), v: v, raw: raw}, nil
}

func formatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return "yaml", nil
	case ".toml":
		return "toml", nil
	}
	return "", fmt.Errorf("config file %s: unsupported extension %q (want .yaml, .yml or .toml)", path, filepath.Ext(path))
}

func parseRaw(kind string, b []byte) (map[string]any, error) {
	m := map[string]any{}
	var err error
	if kind == "toml" {
		err = toml.Unmarshal(b, &m)
	} else {
		err = yaml.Unmarshal(b, &m)
	}
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// resolveParallelCreates: max_concurrent_creates and
// scaling_max_parallel_creates both bound the backend connects in flight per
// pool; the pool enforces scaling_max_parallel_creates, so it is lowered to
// max_concurrent_creates when that is the tighter bound. Invalid values are
// left for validation to report.
func resolveParallelCreates(g *General) {
	if g.MaxConcurrentCreates >= 1 && g.MaxConcurrentCreates < g.ScalingMaxParallelCreates {
		g.ScalingMaxParallelCreates = g.MaxConcurrentCreates
	}
}
