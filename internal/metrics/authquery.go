package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/doorman-go/doorman/internal/daemon"
)

// The four auth_query families the seed names; present only while some
// pool has an auth_query block. Counters restart with the cache on reload.
var (
	aqCacheDesc = prometheus.NewDesc("pg_doorman_auth_query_cache",
		"auth_query cache of a database: entries (gauge), hits, misses, refetches (after a failed authentication), rate_limited (re-fetches refused by min_interval), stale (expired entries served because the lookup failed), evictions (cumulative).",
		[]string{"type", "database"}, nil)
	aqAuthDesc = prometheus.NewDesc("pg_doorman_auth_query_auth",
		"Logins of users looked up by auth_query, by result (cumulative).",
		[]string{"result", "database"}, nil)
	aqExecutorDesc = prometheus.NewDesc("pg_doorman_auth_query_executor",
		"auth_query lookup queries run (queries) and failed (errors: connect, query error, unusable result), and executor connects that failed while they were opened at start (warm_errors), cumulative.",
		[]string{"type", "database"}, nil)
	aqDynamicDesc = prometheus.NewDesc("pg_doorman_auth_query_dynamic_pools",
		"Pools created by auth_query: current (gauge), created and collected (cumulative).",
		[]string{"type", "database"}, nil)
)

// authQueryCollector reads the auth_query resolvers at scrape time.
type authQueryCollector struct{ d *daemon.Daemon }

func (c authQueryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- aqCacheDesc
	ch <- aqAuthDesc
	ch <- aqExecutorDesc
	ch <- aqDynamicDesc
}

func (c authQueryCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, r := range c.d.Pools.Resolvers() {
		st, db := &r.Stats, r.Database
		gauge(aqCacheDesc, float64(r.Entries()), "entries", db)
		for _, m := range []struct {
			t string
			v uint64
		}{{"hits", st.CacheHits.Load()}, {"misses", st.CacheMisses.Load()}, {"refetches", st.CacheRefetches.Load()},
			{"rate_limited", st.RateLimited.Load()}, {"stale", st.StaleServed.Load()}, {"evictions", st.Evictions.Load()}} {
			gauge(aqCacheDesc, float64(m.v), m.t, db)
		}
		gauge(aqAuthDesc, float64(st.AuthSuccess.Load()), "success", db)
		gauge(aqAuthDesc, float64(st.AuthFailure.Load()), "failure", db)
		gauge(aqExecutorDesc, float64(st.ExecutorQueries.Load()), "queries", db)
		gauge(aqExecutorDesc, float64(st.ExecutorErrors.Load()), "errors", db)
		gauge(aqExecutorDesc, float64(st.WarmErrors.Load()), "warm_errors", db)
		dyn := c.d.Pools.Dynamic(db)
		gauge(aqDynamicDesc, float64(dyn.Current), "current", db)
		gauge(aqDynamicDesc, float64(dyn.Created), "created", db)
		gauge(aqDynamicDesc, float64(dyn.Collected), "collected", db)
	}
}
