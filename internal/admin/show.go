package admin

import (
	"sort"
	"time"

	"github.com/doorman-go/doorman/internal/authquery"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/pooler"
)

// poolsColumns are PgBouncer 1.2x's SHOW POOLS columns in its order, then
// pg_doorman's own: "paused" (documented by pg_doorman) and "cl_idle"
// (the Rust pg_doorman's and the seed's). Both come last so that scripts
// reading PgBouncer's columns by position keep working.
func poolsColumns() []column {
	return []column{
		textCol("database"), textCol("user"),
		int4Col("cl_active"), int4Col("cl_waiting"),
		int4Col("cl_active_cancel_req"), int4Col("cl_waiting_cancel_req"),
		int4Col("sv_active"), int4Col("sv_active_cancel"), int4Col("sv_being_canceled"),
		int4Col("sv_idle"), int4Col("sv_used"), int4Col("sv_tested"), int4Col("sv_login"),
		int4Col("maxwait"), int4Col("maxwait_us"), textCol("pool_mode"),
		int4Col("paused"), int4Col("cl_idle"),
	}
}

// poolsRow is one pool under poolsColumns. cl_active keeps PgBouncer's
// meaning (idle and active clients); cl_idle is the part of it that holds
// no server. sv_idle and sv_used split the idle connections as PgBouncer's
// lists do: sv_used sat idle past server_idle_check_timeout and will be
// probed before use. Cancel requests and sv_tested (no reset query runs
// here) are 0.
func poolsRow(p poolSnap) []cell {
	wait := p.Conns.MaxWait
	used := min(p.SvUsed, p.Conns.Idle)
	return []cell{
		text(p.Database), text(p.User),
		i4(p.ClActive), i4(p.ClWaiting),
		i4(0), i4(0),
		i4(p.Conns.Busy), i4(0), i4(0),
		i4(p.Conns.Idle - used), i4(used), i4(0), i4(p.Conns.Creating),
		i4(seconds(wait)), i4(int(wait % time.Second / time.Microsecond)), text(p.Mode),
		flag(p.Conns.Paused), i4(p.ClIdle),
	}
}

func showPools(pools []poolSnap) resultSet {
	rs := resultSet{Columns: poolsColumns()}
	for _, p := range pools {
		rs.Rows = append(rs.Rows, poolsRow(p))
	}
	return rs
}

// showDatabases has one row per pool, like the Rust pg_doorman: a database
// with several users has several rows told apart by force_user.
func showDatabases(pools []poolSnap) resultSet {
	rs := resultSet{Columns: []column{
		textCol("name"), textCol("host"), int4Col("port"), textCol("database"),
		textCol("force_user"), int4Col("pool_size"), int4Col("min_pool_size"),
		int4Col("reserve_pool"), int4Col("server_lifetime"), textCol("pool_mode"),
		int4Col("max_connections"), int4Col("current_connections"),
		int4Col("paused"), int4Col("disabled"),
	}}
	for _, p := range pools {
		rs.Rows = append(rs.Rows, []cell{
			text(p.Database), text(p.Host), i4(p.Port), text(p.ServerDatabase),
			text(p.User), i4(p.PoolSize), i4(p.MinPoolSize),
			i4(p.ReservePool), i4(seconds(p.ServerLifetime)), text(p.Mode),
			i4(p.MaxDBConnections), i4(p.Conns.Total),
			flag(p.Conns.Paused), i4(0),
		})
	}
	return rs
}

// showUsers lists each user once, sorted by name, with the pool mode of
// its first pool in database order.
func showUsers(pools []poolSnap) resultSet {
	rs := resultSet{Columns: []column{textCol("name"), textCol("pool_mode")}}
	mode := map[string]string{}
	var names []string
	for _, p := range pools {
		if _, ok := mode[p.User]; !ok {
			mode[p.User] = p.Mode
			names = append(names, p.User)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		rs.Rows = append(rs.Rows, []cell{text(n), text(mode[n])})
	}
	return rs
}

// listCounts feeds SHOW LISTS.
type listCounts struct {
	Databases, Users, Pools   int
	UsedClients, LoginClients int
	UsedServers               int
}

func countLists(cfg *config.Config, pools []poolSnap, clients []socketSnap) listCounts {
	lc := listCounts{Databases: len(cfg.Pools), Pools: len(pools)}
	users := map[string]bool{}
	for _, p := range pools {
		users[p.User] = true
		lc.UsedServers += p.Conns.Total
	}
	lc.Users = len(users)
	for _, c := range clients {
		if c.State == "login" {
			lc.LoginClients++
		}
	}
	lc.UsedClients = len(clients)
	return lc
}

// showLists keeps PgBouncer's rows and order; what has no counterpart here
// (peers, slab free lists, DNS) is 0.
func showLists(lc listCounts) resultSet {
	rs := resultSet{Columns: []column{textCol("list"), int4Col("items")}}
	for _, r := range []struct {
		name string
		n    int
	}{
		{"databases", lc.Databases}, {"users", lc.Users}, {"peers", 0},
		{"pools", lc.Pools}, {"peer_pools", 0},
		{"free_clients", 0}, {"used_clients", lc.UsedClients}, {"login_clients", lc.LoginClients},
		{"free_servers", 0}, {"used_servers", lc.UsedServers},
		{"dns_names", 0}, {"dns_zones", 0}, {"dns_queries", 0}, {"dns_pending", 0},
	} {
		rs.Rows = append(rs.Rows, []cell{text(r.name), i4(r.n)})
	}
	return rs
}

// socketColumns are SHOW CLIENTS and SHOW SERVERS of PgBouncer 1.2x.
func socketColumns() []column {
	return []column{
		textCol("type"), textCol("user"), textCol("database"), textCol("state"),
		textCol("addr"), int4Col("port"), textCol("local_addr"), int4Col("local_port"),
		textCol("connect_time"), textCol("request_time"),
		int4Col("wait"), int4Col("wait_us"), int4Col("close_needed"),
		textCol("ptr"), textCol("link"), int4Col("remote_pid"), textCol("tls"),
		textCol("application_name"), int4Col("prepared_statements"),
	}
}

func showSockets(rows []socketSnap) resultSet {
	rs := resultSet{Columns: socketColumns()}
	for _, r := range rows {
		rs.Rows = append(rs.Rows, []cell{
			text(r.Type), text(r.User), text(r.Database), text(r.State),
			text(r.Addr), i4(r.Port), text(r.LocalAddr), i4(r.LocalPort),
			timestamp(r.ConnectTime), timestamp(r.Request),
			i4(seconds(r.Wait)), i4(int(r.Wait % time.Second / time.Microsecond)), i4(0),
			text(r.Ptr), text(r.Link), i4(r.RemotePID), text(r.TLS),
			text(r.AppName), i4(r.PreparedStatementCount),
		})
	}
	return rs
}

// restartOnly are the settings a RELOAD does not apply (seed: listener,
// client TLS, runtime threads). The client certificate, key and CA are
// reloaded (beyond the seed); tls_mode and the handshake rate are not.
// backlog is: listen(2) again on the open listeners (internal/daemon).
var restartOnly = map[string]bool{
	"host": true, "port": true, "unix_socket_dir": true, "transaction_loop": true,
	"tls_mode": true, "tls_rate_limit_per_second": true,
	"daemon_pid_file": true, "syslog_prog_name": true,
	"worker_threads": true, "worker_cpu_affinity_pinning": true, "tokio_global_queue_interval": true,
	"tokio_event_interval": true, "worker_stack_size": true, "max_blocking_threads": true,
	"prometheus.enabled": true, "prometheus.host": true, "prometheus.port": true,
}

// showConfig lists settings with their documented defaults; secrets come
// already masked from config.Settings.
func showConfig(settings, defaults []config.Setting) resultSet {
	rs := resultSet{Columns: []column{textCol("key"), textCol("value"), textCol("default"), textCol("changeable")}}
	def := make(map[string]string, len(defaults))
	for _, s := range defaults {
		def[s.Key] = s.Value
	}
	for _, s := range settings {
		changeable := "yes"
		if restartOnly[s.Key] {
			changeable = "no"
		}
		rs.Rows = append(rs.Rows, []cell{text(s.Key), text(s.Value), text(def[s.Key]), text(changeable)})
	}
	return rs
}

func showVersion(version string) resultSet {
	return resultSet{Columns: []column{textCol("version")}, Rows: [][]cell{{text("PgDoorman " + version)}}}
}

func showLogLevel(level string) resultSet {
	return resultSet{Columns: []column{textCol("log_level")}, Rows: [][]cell{{text(level)}}}
}

// helpDetail is SHOW HELP's NOTICE detail, line for line the seed's.
const helpDetail = "\n\tSHOW HELP|CONFIG|DATABASES|POOLS|POOLS_EXTENDED|POOLS_MEMORY|POOL_COORDINATOR|POOL_SCALING" +
	"\n\tSHOW CLIENTS|SERVERS|USERS|CONNECTIONS|STATS|PREPARED_STATEMENTS|AUTH_QUERY" +
	"\n\tSHOW LISTS|SOCKETS|LOG_LEVEL|VERSION" +
	"\n\tSET log_level = '<filter>'" +
	"\n\tRELOAD" +
	"\n\tSHUTDOWN" +
	"\n\tUPGRADE" +
	"\n\tPAUSE [db]" +
	"\n\tRESUME [db]" +
	"\n\tRECONNECT [db]"

// showPrepared lists the pool-level prepared statement caches: one row per
// cached statement with the pool's counters repeated, most recently used
// first.
func showPrepared(pools []*pooler.Pool) resultSet {
	rs := resultSet{Columns: []column{
		textCol("database"), textCol("user"), textCol("name"), textCol("query"),
		int4Col("param_types"), int4Col("verified"),
		int8Col("pool_hits"), int8Col("pool_misses"), int8Col("pool_injected"), int8Col("pool_evictions"),
	}}
	for _, p := range pools {
		if p.Statements == nil {
			continue
		}
		cs := p.Statements.Stats()
		for _, st := range p.Statements.Entries() {
			rs.Rows = append(rs.Rows, []cell{
				text(p.Database), text(p.User), text(st.Name), text(st.Query),
				i4(len(st.ParamOIDs)), flag(st.Verified()),
				u8(p.Stats.PreparedHits.Load()), u8(p.Stats.PreparedMisses.Load()),
				u8(p.Stats.PreparedInjected.Load()), u8(cs.Evictions),
			})
		}
	}
	return rs
}

// showPoolScaling is the seed's SHOW POOL_SCALING: the anticipation and
// burst-gate counters of each pool, monotonic since start. The seed names
// the fourth counter burst_gate_budget_ex in its sample output and
// gate_budget_ex in its awk recipe; the sample (what psql shows) wins.
func showPoolScaling(pools []*pooler.Pool) resultSet {
	rs := resultSet{Columns: []column{
		textCol("user"), textCol("database"), int4Col("inflight"), int8Col("creates"),
		int8Col("gate_waits"), int8Col("burst_gate_budget_ex"), int8Col("antic_notify"),
		int8Col("antic_timeout"), int8Col("create_fallback"), int8Col("replenish_def"),
	}}
	for _, p := range pools {
		s := p.Conns().Stats()
		rs.Rows = append(rs.Rows, []cell{
			text(p.User), text(p.Database), i4(s.Creating), u8(s.CreatesStarted),
			u8(s.GateWaits), u8(s.GateBudgetExhausted), u8(s.AnticipationNotify),
			u8(s.AnticipationTimeout), u8(s.CreateFallback), u8(s.ReplenishDeferred),
		})
	}
	return rs
}

// showPoolCoordinator is the seed's SHOW POOL_COORDINATOR: one row per
// database with max_db_connections > 0.
func showPoolCoordinator(coords []*coordinator.Coordinator) resultSet {
	var rs resultSet
	for i, name := range coordinator.Columns() {
		if i == 0 {
			rs.Columns = append(rs.Columns, textCol(name))
		} else {
			rs.Columns = append(rs.Columns, int8Col(name))
		}
	}
	for _, c := range coords {
		var row []cell
		for _, v := range c.Snapshot().Row() {
			row = append(row, text(v))
		}
		rs.Rows = append(rs.Rows, row)
	}
	return rs
}

// showAuthQuery is the seed's SHOW AUTH_QUERY: one row per database with
// an auth_query block, its counters since the last reload.
func showAuthQuery(resolvers []*authquery.Resolver) resultSet {
	rs := resultSet{Columns: []column{textCol("database")}}
	for _, name := range []string{"cache_entries", "cache_hits", "cache_misses", "cache_refetches", "rate_limited",
		"auth_success", "auth_failure", "executor_queries", "executor_errors"} {
		rs.Columns = append(rs.Columns, int8Col(name))
	}
	for _, r := range resolvers {
		st := &r.Stats
		rs.Rows = append(rs.Rows, []cell{text(r.Database), u8(uint64(r.Entries())),
			u8(st.CacheHits.Load()), u8(st.CacheMisses.Load()), u8(st.CacheRefetches.Load()), u8(st.RateLimited.Load()),
			u8(st.AuthSuccess.Load()), u8(st.AuthFailure.Load()), u8(st.ExecutorQueries.Load()), u8(st.ExecutorErrors.Load())})
	}
	return rs
}
