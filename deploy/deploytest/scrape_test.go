//go:build linux

package deploytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// emptyInHealthyRun lists dashboard expressions and alert selectors that
// select nothing in a healthy run, each with the reason; the test only
// checks that Prometheus accepts them. Keys are the substring that
// identifies them (a family name).
var emptyInHealthyRun = map[string]string{
	// A CounterVec without pre-created series: a series appears with the
	// first server connection that dies under a client.
	"pg_doorman_server_connections_lost_total": "no server connection dies in this run",
	// Per pool, created on the first GET /cluster round that fails.
	"pg_doorman_patroni_api_errors_total": "the fake Patroni always answers",
}

// firesInThisRun are the alerts whose expression the run provokes on
// purpose (their for: keeps them pending). Every other alert expression
// must be empty: the alerts stay silent in a healthy run.
var firesInThisRun = map[string]string{
	"PgDoormanFallbackActive": "the fallback pool's local server is down by design",
}

func allowlisted(expr string) (string, bool) {
	for k, why := range emptyInHealthyRun {
		if strings.Contains(expr, k) {
			return why, true
		}
	}
	return "", false
}

// TestDashboardAndAlertsAgainstRealScrape: pgbench through pg_doorman,
// Prometheus scraping it every second, then every dashboard and alert
// expression through /api/v1/query.
func TestDashboardAndAlertsAgainstRealScrape(t *testing.T) {
	tool(t, "prometheus") // fail before the slow setup when it is missing
	start := time.Now()
	verifier := prepareCluster(t)
	metricsPort, downPort := apptest.FreePort(t), apptest.FreePort(t)
	d := startDoorman(t, metricsPort, verifier, fakePatroni(t, downPort), downPort)
	prom := startPrometheus(t, fmt.Sprintf("127.0.0.1:%d", metricsPort), rulesPath(t))
	prom.waitFor(t, `up{job="pg_doorman"} == 1`, 20*time.Second)

	pgbench(t, d, "-i", "-s", "1", "-q")
	pgbench(t, d, "-S", "-M", "prepared", "-c", "4", "-j", "2", "-T", "4")
	exercise(t, d)
	// Data of the whole run, and a scrape after the last login.
	after := time.Now()
	prom.waitFor(t, `pg_doorman_pools_transactions_total{database="benchdb"} > 0`, 10*time.Second)
	prom.waitFor(t, `pg_doorman_auth_query_dynamic_pools{type="created"} > 0`, 10*time.Second)
	// Series born in exercise (the auth_query user's pool, the fallback
	// counters) need two samples for rate().
	for _, sel := range []string{`pg_doorman_pools_transactions_total{database="aqdb"}`, `pg_doorman_fallback_connections_total`,
		`pg_doorman_fallback_cache_hits_total`} {
		prom.waitFor(t, "count_over_time("+sel+"[1m]) >= 2", 10*time.Second)
	}
	prom.waitFor(t, fmt.Sprintf(`timestamp(up{job="pg_doorman"}) > %d`, after.Unix()+1), 10*time.Second)
	t.Logf("setup and load took %s", time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("dashboard", func(t *testing.T) {
		exprs := dashboardExprs(t, dashboardPath(t))
		require.Greater(t, len(exprs), 40)
		for _, pe := range exprs {
			expr := grafanaVars(pe.expr)
			require.NotContains(t, expr, "$", "panel %q: a template variable is left unsubstituted", pe.panel)
			n, err := prom.query(ctx, expr)
			require.NoError(t, err, "panel %q: %s", pe.panel, expr)
			if why, ok := allowlisted(expr); ok {
				t.Logf("allowlisted (%s): panel %q: %d series: %s", why, pe.panel, n, expr)
				continue
			}
			require.Positive(t, n, "panel %q returns no data: %s", pe.panel, expr)
		}
	})
	t.Run("alerts", func(t *testing.T) {
		rules := alertRules(t, rulesPath(t))
		require.Greater(t, len(rules), 15)
		for _, r := range rules {
			n, err := prom.query(ctx, r.Expr)
			require.NoError(t, err, "alert %s", r.Alert)
			t.Logf("alert %s: %d series", r.Alert, n)
			if _, ok := firesInThisRun[r.Alert]; ok {
				require.Positive(t, n, "alert %s is provoked by this run: %s", r.Alert, r.Expr)
			} else {
				require.Zero(t, n, "alert %s fires in a healthy run: %s", r.Alert, r.Expr)
			}
			for _, sel := range selectors(r.Expr) {
				n, err := prom.query(ctx, sel)
				require.NoError(t, err, "alert %s: %s", r.Alert, sel)
				if why, ok := allowlisted(sel); ok {
					t.Logf("allowlisted (%s): alert %s: %d series: %s", why, r.Alert, n, sel)
					continue
				}
				require.Positive(t, n, "alert %s watches %s, which selects no series", r.Alert, sel)
			}
		}
	})
	t.Run("rule health", func(t *testing.T) {
		health, err := prom.ruleHealth(ctx)
		require.NoError(t, err)
		for name, h := range health {
			require.True(t, strings.HasPrefix(h, "ok"), "rule %s: %s", name, h)
		}
		require.Len(t, health, len(alertRules(t, rulesPath(t))))
	})
}
