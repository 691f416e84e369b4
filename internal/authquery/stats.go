package authquery

import "sync/atomic"

// Stats are the cumulative counters of one database's auth_query, the
// columns of SHOW AUTH_QUERY.
type Stats struct {
	CacheHits       atomic.Uint64 // logins answered from the cache
	CacheMisses     atomic.Uint64 // logins that had to query
	CacheRefetches  atomic.Uint64 // queries after a failed authentication
	RateLimited     atomic.Uint64 // re-fetches refused by min_interval
	AuthSuccess     atomic.Uint64 // logins that passed against a looked-up verifier
	AuthFailure     atomic.Uint64 // logins that failed (wrong password, unknown user, lookup error)
	ExecutorQueries atomic.Uint64 // lookup queries run
	ExecutorErrors  atomic.Uint64 // lookups that failed (connect, query error, bad result, no connection free in time)
	WarmErrors      atomic.Uint64 // connects that failed while Warm opened the executor connections
	StaleServed     atomic.Uint64 // expired entries used because the lookup failed
	Evictions       atomic.Uint64 // entries dropped to stay within MaxEntries
}
