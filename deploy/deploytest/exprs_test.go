//go:build linux

package deploytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// panelExpr is one PromQL expression of the dashboard.
type panelExpr struct {
	panel, expr string
}

// dashboardExprs returns every "expr" string of the dashboard JSON (panel
// targets), with the panel title.
func dashboardExprs(t testing.TB, path string) []panelExpr {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []panelExpr
	var walk func(v any, title string)
	walk = func(v any, title string) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["title"].(string); ok {
				title = s
			}
			if e, ok := v["expr"].(string); ok {
				out = append(out, panelExpr{title, e})
			}
			for _, c := range v {
				walk(c, title)
			}
		case []any:
			for _, c := range v {
				walk(c, title)
			}
		}
	}
	walk(doc, "")
	return out
}

// alertRule is one rule of the rules file.
type alertRule struct {
	Alert string `yaml:"alert"`
	Expr  string `yaml:"expr"`
}

func alertRules(t testing.TB, path string) []alertRule {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []alertRule
	for _, g := range doc.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// grafanaVars stands in for the dashboard's template variables: all pools
// of the test, formatted as Grafana formats a multi-value regex variable,
// and a rate interval that spans several 1 s scrapes.
func grafanaVars(expr string) string {
	return strings.NewReplacer(
		"$__rate_interval", "1m",
		"$__interval", "15s",
		"$database", "("+benchDB+"|"+authDB+"|"+fallbackDB+")",
		"$user", ".*",
		"$job", "pg_doorman",
	).Replace(expr)
}

// selectorRE finds the instant or range vector selectors of an expression:
// a metric name with its optional label matchers (not function names:
// those are followed by "(").
var selectorRE = regexp.MustCompile(`\b(pg_doorman_[a-z_]+|up)\b(\{[^}]*\})?`)

func selectors(expr string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range selectorRE.FindAllString(expr, -1) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

func dashboardPath(t testing.TB) string {
	return filepath.Join(deployDir(t), "grafana", "pg_doorman.json")
}

func rulesPath(t testing.TB) string {
	return filepath.Join(deployDir(t), "prometheus", "pg_doorman_alerts.yml")
}

func TestSelectors(t *testing.T) {
	t.Parallel()
	got := selectors(`sum by (database) (rate(pg_doorman_pools_bytes_total{database=~"x"}[1m])) / ignoring (type) up{job="pg_doorman"} and pg_doorman_total_memory`)
	want := []string{`pg_doorman_pools_bytes_total{database=~"x"}`, `up{job="pg_doorman"}`, `pg_doorman_total_memory`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("selectors: got %q, want %q", got, want)
	}
}
