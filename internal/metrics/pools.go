package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"time"

	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/pooler"
)

// poolSnapshot is what one scrape reads from one pool. The pooler counters
// are separate atomics, so the client counts may disagree by one or two
// while sessions move between states; derived values are clamped at zero.
type poolSnapshot struct {
	user, database string
	poolSize       int
	conns          pool.Stats

	xacts, queries, received, sent uint64
	xactTime, queryTime            uint64 // µs
	waitTime, waitCount            uint64 // µs, count
	waitTimeouts, connectErrors    uint64
	connectRetries                 uint64
	retryNotLeader, inRecovery     uint64
	leftWaiting, waitsCanceled     uint64
	clients, active, waiting       int64

	prepared      [6]uint64 // hit, miss, injected, client_eviction, server_eviction, cache_eviction
	preparedCache int

	xactPct, queryPct [4]float64 // p50, p90, p95, p99 in ms
}

func snapshot(p *pooler.Pool) *poolSnapshot {
	st := &p.Stats
	s := &poolSnapshot{
		user: p.User, database: p.Database,
		conns: p.Conns().Stats(),
		xacts: st.XactCount.Load(), queries: st.QueryCount.Load(),
		received: st.BytesReceived.Load(), sent: st.BytesSent.Load(),
		xactTime: st.XactTime.Load(), queryTime: st.QueryTime.Load(),
		waitTime: st.WaitTime.Load(), waitCount: st.WaitCount.Load(),
		waitTimeouts: st.WaitTimeouts.Load(), connectErrors: st.ConnectErrors.Load(), connectRetries: st.ConnectRetries.Load(),
		retryNotLeader: st.RetryNotLeader.Load(), inRecovery: st.ConnectInRecovery.Load(),
		leftWaiting: st.LeftWhileWaiting.Load(), waitsCanceled: st.WaitsCanceled.Load(),
		clients: st.Clients.Load(), active: st.ClientsActive.Load(), waiting: st.ClientsWaiting.Load(),
	}
	if set := p.Settings(); set != nil && set.User != nil {
		s.poolSize = set.User.PoolSize
	}
	for i, q := range [4]float64{0.5, 0.9, 0.95, 0.99} {
		s.xactPct[i] = millisOf(p.XactTimes.Quantile(q))
		s.queryPct[i] = millisOf(p.QueryTimes.Quantile(q))
	}
	if p.Statements != nil {
		cs := p.Statements.Stats()
		s.prepared = [6]uint64{st.PreparedHits.Load(), st.PreparedMisses.Load(), st.PreparedInjected.Load(),
			st.PreparedClientEvictions.Load(), st.PreparedServerEvictions.Load(), cs.Evictions}
		s.preparedCache = cs.Size
	}
	return s
}

func (s *poolSnapshot) idleClients() float64    { return nonNegative(s.clients - s.active) }
func (s *poolSnapshot) activeClients() float64  { return nonNegative(s.active - s.waiting) }
func (s *poolSnapshot) waitingClients() float64 { return nonNegative(s.waiting) }

// avgWaitMillis is the mean wait for a server connection since the pool was
// created, in milliseconds.
func (s *poolSnapshot) avgWaitMillis() float64 {
	if s.waitCount == 0 {
		return 0
	}
	return float64(s.waitTime) / float64(s.waitCount) / 1e3
}

func nonNegative(n int64) float64 { return float64(max(n, 0)) }

func millis(us uint64) float64  { return float64(us) / 1e3 } // µs → ms
func seconds(us uint64) float64 { return float64(us) / 1e6 } // µs → s

var poolLabels = []string{"user", "database"}

func poolDesc(name, help string, first ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(first, poolLabels...), nil)
}

// Per-pool families. Names and units of the first group are the seed's.
var (
	poolsClientsDesc = poolDesc("pg_doorman_pools_clients",
		"Clients of a pool by status: idle (logged in, no server), active (holding a server), waiting (queued for a server).", "status")
	poolsServersDesc = poolDesc("pg_doorman_pools_servers",
		"Server connections of a pool by status: active (serving a client) and idle (free).", "status")
	poolSizeDesc = poolDesc("pg_doorman_pool_size",
		"Configured maximum number of server connections of a pool (pool_size).")
	poolsBytesDesc = poolDesc("pg_doorman_pools_bytes",
		"Bytes through a pool since it was created, by direction: received (from clients) and sent (to clients). A gauge for compatibility; prefer pg_doorman_pools_bytes_total.", "direction")
	queriesCountDesc = poolDesc("pg_doorman_pools_queries_count",
		"Queries executed through a pool. A gauge for compatibility; prefer pg_doorman_pools_queries_total.")
	xactsCountDesc = poolDesc("pg_doorman_pools_transactions_count",
		"Transactions executed through a pool. A gauge for compatibility; prefer pg_doorman_pools_transactions_total.")
	queriesTimeDesc = poolDesc("pg_doorman_pools_queries_total_time",
		"Total time of queries executed through a pool, in milliseconds.")
	xactsTimeDesc = poolDesc("pg_doorman_pools_transactions_total_time",
		"Total time of transactions executed through a pool, in milliseconds.")
	avgWaitDesc = poolDesc("pg_doorman_pools_avg_wait_time",
		"Average time clients of a pool waited for a server connection since the pool was created, in milliseconds.")

	bytesTotalDesc = poolDesc("pg_doorman_pools_bytes_total",
		"Bytes through a pool by direction: received (from clients) and sent (to clients).", "direction")
	queriesTotalDesc = poolDesc("pg_doorman_pools_queries_total",
		"Queries executed through a pool.")
	xactsTotalDesc = poolDesc("pg_doorman_pools_transactions_total",
		"Transactions executed through a pool.")
	waitSecondsDesc = poolDesc("pg_doorman_pools_wait_seconds_total",
		"Total time clients of a pool waited for a server connection, in seconds; divide its rate by the rate of pg_doorman_pools_waits_total for a recent average.")
	waitsDesc = poolDesc("pg_doorman_pools_waits_total",
		"Server connection requests of clients of a pool (including those served at once).")
	maxWaitDesc = poolDesc("pg_doorman_pools_maxwait_seconds",
		"How long the oldest client waiting for a server connection of a pool has waited, in seconds (0 when none waits).")
	waitTimeoutsDesc = poolDesc("pg_doorman_pools_wait_timeouts_total",
		"Clients of a pool that gave up after query_wait_timeout without a server connection.")
	connectErrorsDesc = poolDesc("pg_doorman_server_connect_errors_total",
		"Failed attempts of a pool to open a server connection (connect, TLS or authentication to PostgreSQL).")
	connectRetriesDesc = poolDesc("pg_doorman_server_connect_retries_total",
		"Server connects of a pool tried again after server_login_retry, because the last one failed in a way a server coming back would cure (refused, reset, starting up or shutting down) while a client waited.")
	retryNotLeaderDesc = poolDesc("pg_doorman_server_login_retry_not_leader_total",
		"Failed server connects of a pool not tried again because the local Patroni (server_login_retry_patroni) did not hold the leader lock or did not answer; the waiting client got the error at once.")
	inRecoveryDesc = poolDesc("pg_doorman_server_connect_in_recovery_total",
		"New server connections of a pool closed and tried again because they came up in recovery while the local Patroni held the leader lock (a leader restarting in place, not promoted yet).")
	leftWaitingDesc = poolDesc("pg_doorman_pools_clients_left_waiting_total",
		"Clients of a pool found gone (end of file or reset on their socket) when a server connection came after they had waited 100 ms or more for one; their statements were not sent.")
	waitsCanceledDesc = poolDesc("pg_doorman_pools_waits_canceled_total",
		"Waits of clients of a pool for a server connection stopped by the client's cancel request; the statement was answered 57014 and not sent.")
	scalingDesc = poolDesc("pg_doorman_pool_scaling",
		"Pool pressure gauges of a pool: inflight_creates (backend connects in flight, bounded by scaling_max_parallel_creates).", "type")
	scalingTotalDesc = poolDesc("pg_doorman_pool_scaling_total",
		"Pool pressure counters of a pool: creates_started, burst_gate_waits, burst_gate_budget_exhausted, anticipation_wakes_notify, anticipation_wakes_timeout, create_fallback, replenish_deferred.", "type")
	xactPercentileDesc = poolDesc("pg_doorman_pools_transactions_percentile",
		"Transaction latency percentiles of a pool in milliseconds since start, reload or RECONNECT.", "percentile")
	queryPercentileDesc = poolDesc("pg_doorman_pools_queries_percentile",
		"Query latency percentiles of a pool in milliseconds since start, reload or RECONNECT.", "percentile")
	preparedDesc = poolDesc("pg_doorman_prepared_statements_total",
		"Prepared statement events of a pool in transaction mode: hit and miss of a client Parse in the pool cache, injected (Parse sent to a server that lacked the statement), client_eviction (client_prepared_statements_cache_size), server_eviction (Close sent to make room on a server), cache_eviction (prepared_statements_cache_size).", "event")
	preparedCacheDesc = poolDesc("pg_doorman_prepared_statements_cache_entries",
		"Statements in a pool's prepared statement cache.")
	serversPreparedHitsDesc = poolDesc("pg_doorman_servers_prepared_hits",
		"Client Parse messages of a pool found in its prepared statement cache (the server side then reuses a statement it has, or gets it injected), cumulative. A gauge for compatibility; pg_doorman_prepared_statements_total{event=\"hit\"} is the same as a counter.")
	serversPreparedMissesDesc = poolDesc("pg_doorman_servers_prepared_misses",
		"Client Parse messages of a pool new to its prepared statement cache, cumulative. A gauge for compatibility; pg_doorman_prepared_statements_total{event=\"miss\"} is the same as a counter.")
	serverEventsDesc = poolDesc("pg_doorman_pools_server_events_total",
		"Server connection events of a pool: created, closed, destroyed (of closed: found unusable by its user and closed instead of returned), create_failed (a connect that failed, or a connection permit not granted in time), check_failed (idle check), idle_expired (idle_timeout), lifetime_expired (server_lifetime).", "event")
)

// poolSeries is one series per pool: a family, the value of its leading
// label ("" when it has only user and database) and how to read it.
type poolSeries struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	label string
	value func(*poolSnapshot) float64
}

func gauge(d *prometheus.Desc, label string, f func(*poolSnapshot) float64) poolSeries {
	return poolSeries{d, prometheus.GaugeValue, label, f}
}

func counter(d *prometheus.Desc, label string, f func(*poolSnapshot) float64) poolSeries {
	return poolSeries{d, prometheus.CounterValue, label, f}
}

// allPoolSeries is every series exported per pool, in exposition order.
func allPoolSeries() []poolSeries {
	return []poolSeries{
		gauge(poolsClientsDesc, "idle", (*poolSnapshot).idleClients),
		gauge(poolsClientsDesc, "active", (*poolSnapshot).activeClients),
		gauge(poolsClientsDesc, "waiting", (*poolSnapshot).waitingClients),
		gauge(poolsServersDesc, "active", func(s *poolSnapshot) float64 { return float64(s.conns.Busy) }),
		gauge(poolsServersDesc, "idle", func(s *poolSnapshot) float64 { return float64(s.conns.Idle) }),
		gauge(poolSizeDesc, "", func(s *poolSnapshot) float64 { return float64(s.poolSize) }),
		gauge(poolsBytesDesc, "received", func(s *poolSnapshot) float64 { return float64(s.received) }),
		gauge(poolsBytesDesc, "sent", func(s *poolSnapshot) float64 { return float64(s.sent) }),
		gauge(queriesCountDesc, "", func(s *poolSnapshot) float64 { return float64(s.queries) }),
		gauge(xactsCountDesc, "", func(s *poolSnapshot) float64 { return float64(s.xacts) }),
		gauge(queriesTimeDesc, "", func(s *poolSnapshot) float64 { return millis(s.queryTime) }),
		gauge(xactsTimeDesc, "", func(s *poolSnapshot) float64 { return millis(s.xactTime) }),
		gauge(avgWaitDesc, "", (*poolSnapshot).avgWaitMillis),
		counter(bytesTotalDesc, "received", func(s *poolSnapshot) float64 { return float64(s.received) }),
		counter(bytesTotalDesc, "sent", func(s *poolSnapshot) float64 { return float64(s.sent) }),
		counter(queriesTotalDesc, "", func(s *poolSnapshot) float64 { return float64(s.queries) }),
		counter(xactsTotalDesc, "", func(s *poolSnapshot) float64 { return float64(s.xacts) }),
		counter(waitSecondsDesc, "", func(s *poolSnapshot) float64 { return seconds(s.waitTime) }),
		counter(waitsDesc, "", func(s *poolSnapshot) float64 { return float64(s.waitCount) }),
		gauge(maxWaitDesc, "", func(s *poolSnapshot) float64 { return s.conns.MaxWait.Seconds() }),
		counter(waitTimeoutsDesc, "", func(s *poolSnapshot) float64 { return float64(s.waitTimeouts) }),
		counter(connectErrorsDesc, "", func(s *poolSnapshot) float64 { return float64(s.connectErrors) }),
		counter(connectRetriesDesc, "", func(s *poolSnapshot) float64 { return float64(s.connectRetries) }),
		counter(retryNotLeaderDesc, "", func(s *poolSnapshot) float64 { return float64(s.retryNotLeader) }),
		counter(inRecoveryDesc, "", func(s *poolSnapshot) float64 { return float64(s.inRecovery) }),
		counter(leftWaitingDesc, "", func(s *poolSnapshot) float64 { return float64(s.leftWaiting) }),
		counter(waitsCanceledDesc, "", func(s *poolSnapshot) float64 { return float64(s.waitsCanceled) }),
		counter(serverEventsDesc, "created", func(s *poolSnapshot) float64 { return float64(s.conns.Created) }),
		counter(serverEventsDesc, "closed", func(s *poolSnapshot) float64 { return float64(s.conns.Closed) }),
		counter(serverEventsDesc, "destroyed", func(s *poolSnapshot) float64 { return float64(s.conns.Destroyed) }),
		counter(serverEventsDesc, "create_failed", func(s *poolSnapshot) float64 { return float64(s.conns.CreateErrors) }),
		counter(serverEventsDesc, "check_failed", func(s *poolSnapshot) float64 { return float64(s.conns.CheckFailures) }),
		counter(serverEventsDesc, "idle_expired", func(s *poolSnapshot) float64 { return float64(s.conns.IdleExpired) }),
		counter(serverEventsDesc, "lifetime_expired", func(s *poolSnapshot) float64 { return float64(s.conns.LifetimeClosed) }),
		counter(preparedDesc, "hit", func(s *poolSnapshot) float64 { return float64(s.prepared[0]) }),
		counter(preparedDesc, "miss", func(s *poolSnapshot) float64 { return float64(s.prepared[1]) }),
		counter(preparedDesc, "injected", func(s *poolSnapshot) float64 { return float64(s.prepared[2]) }),
		counter(preparedDesc, "client_eviction", func(s *poolSnapshot) float64 { return float64(s.prepared[3]) }),
		counter(preparedDesc, "server_eviction", func(s *poolSnapshot) float64 { return float64(s.prepared[4]) }),
		counter(preparedDesc, "cache_eviction", func(s *poolSnapshot) float64 { return float64(s.prepared[5]) }),
		gauge(preparedCacheDesc, "", func(s *poolSnapshot) float64 { return float64(s.preparedCache) }),
		gauge(serversPreparedHitsDesc, "", func(s *poolSnapshot) float64 { return float64(s.prepared[0]) }),
		gauge(serversPreparedMissesDesc, "", func(s *poolSnapshot) float64 { return float64(s.prepared[1]) }),
		gauge(scalingDesc, "inflight_creates", func(s *poolSnapshot) float64 { return float64(s.conns.Creating) }),
		counter(scalingTotalDesc, "creates_started", func(s *poolSnapshot) float64 { return float64(s.conns.CreatesStarted) }),
		counter(scalingTotalDesc, "burst_gate_waits", func(s *poolSnapshot) float64 { return float64(s.conns.GateWaits) }),
		counter(scalingTotalDesc, "burst_gate_budget_exhausted", func(s *poolSnapshot) float64 { return float64(s.conns.GateBudgetExhausted) }),
		counter(scalingTotalDesc, "create_only_expired", func(s *poolSnapshot) float64 { return float64(s.conns.CreateOnlyExpired) }),
		counter(scalingTotalDesc, "connects_hedged", func(s *poolSnapshot) float64 { return float64(s.conns.ConnectsHedged) }),
		counter(scalingTotalDesc, "connects_overtaken", func(s *poolSnapshot) float64 { return float64(s.conns.ConnectsOvertaken) }),
		counter(scalingTotalDesc, "anticipation_wakes_notify", func(s *poolSnapshot) float64 { return float64(s.conns.AnticipationNotify) }),
		counter(scalingTotalDesc, "anticipation_wakes_timeout", func(s *poolSnapshot) float64 { return float64(s.conns.AnticipationTimeout) }),
		counter(scalingTotalDesc, "create_fallback", func(s *poolSnapshot) float64 { return float64(s.conns.CreateFallback) }),
		counter(scalingTotalDesc, "replenish_deferred", func(s *poolSnapshot) float64 { return float64(s.conns.ReplenishDeferred) }),
		counter(scalingTotalDesc, "coordinator_permit_waits", func(s *poolSnapshot) float64 { return float64(s.conns.PermitWaits) }),
		gauge(xactPercentileDesc, "50", func(s *poolSnapshot) float64 { return s.xactPct[0] }),
		gauge(xactPercentileDesc, "90", func(s *poolSnapshot) float64 { return s.xactPct[1] }),
		gauge(xactPercentileDesc, "95", func(s *poolSnapshot) float64 { return s.xactPct[2] }),
		gauge(xactPercentileDesc, "99", func(s *poolSnapshot) float64 { return s.xactPct[3] }),
		gauge(queryPercentileDesc, "50", func(s *poolSnapshot) float64 { return s.queryPct[0] }),
		gauge(queryPercentileDesc, "90", func(s *poolSnapshot) float64 { return s.queryPct[1] }),
		gauge(queryPercentileDesc, "95", func(s *poolSnapshot) float64 { return s.queryPct[2] }),
		gauge(queryPercentileDesc, "99", func(s *poolSnapshot) float64 { return s.queryPct[3] }),
	}
}

// poolCollector reads every pool of the daemon at scrape time.
type poolCollector struct {
	d      *daemon.Daemon
	series []poolSeries
}

func newPoolCollector(d *daemon.Daemon) *poolCollector {
	return &poolCollector{d: d, series: allPoolSeries()}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	seen := map[*prometheus.Desc]bool{}
	for _, s := range c.series {
		if !seen[s.desc] {
			seen[s.desc] = true
			ch <- s.desc
		}
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.d.Pools.Pools() {
		snap := snapshot(p)
		for _, s := range c.series {
			labels := []string{snap.user, snap.database}
			if s.label != "" {
				labels = []string{s.label, snap.user, snap.database}
			}
			ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.value(snap), labels...)
		}
	}
}

func millisOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
