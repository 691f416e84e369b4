package metrics

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/logging"
)

// legacyNames are the seed's names that break today's naming rules; they
// stay for compatibility with existing dashboards, next to their _total
// counter forms.
var legacyNames = map[string]string{
	"pg_doorman_connection_count":         `non-histogram and non-summary metrics should not have "_count" suffix`,
	"pg_doorman_pools_queries_count":      `non-histogram and non-summary metrics should not have "_count" suffix`,
	"pg_doorman_pools_transactions_count": `non-histogram and non-summary metrics should not have "_count" suffix`,
}

func TestLintOnlyFlagsTheSeedsLegacyNames(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	m := New(d)
	m.LoginFailure("password")
	m.ServerLost("mydb", "app")
	m.ClientLogin("mydb", "app")
	problems, err := testutil.GatherAndLint(m.Registry())
	require.NoError(t, err)
	got := map[string]string{}
	for _, p := range problems {
		require.NotContains(t, got, p.Metric, "two problems with %s: %s", p.Metric, p.Text)
		got[p.Metric] = p.Text
	}
	require.Equal(t, legacyNames, got)

	problems, err = testutil.CollectAndLint(newPoolCollector(d))
	require.NoError(t, err)
	require.Len(t, problems, 2, "the pool collector's two legacy _count gauges: %v", problems)
}

// TestFamiliesDoc keeps docs/metrics.md, the list users read, equal to
// what a scrape exposes: every family exposed is documented there, and
// every pg_doorman_ family documented is exposed.
func TestFamiliesDoc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/metrics.md")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, match := range regexp.MustCompile("(?m)^\\| `(pg_doorman_[a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[match[1]] = true
	}
	m := New(newDaemonWith(t, func(p *config.Pool) {
		p.MaxDBConnections = 5
		p.AuthQuery = &config.AuthQuery{Query: "SELECT passwd FROM pg_shadow WHERE usename = $1", User: "lookup",
			Database: p.Name, Workers: 1, PoolSize: 1, CacheTTL: time.Hour}
	}))
	m.ServerLost("mydb", "app")
	m.ClientLogin("mydb", "app")
	m.ParamSyncFailed("mydb", "app", "TimeZone") // a counter with no sample is not gathered
	m.RegisterSyslog(new(logging.SyslogCounts))  // as cmd/pg_doorman does when it logs to syslog
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	exposed := map[string]bool{}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "pg_doorman_") {
			exposed[mf.GetName()] = true
		}
	}
	require.Equal(t, sortedKeys(exposed), sortedKeys(documented))
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
