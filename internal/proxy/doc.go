// Package proxy is patroni_proxy: a TCP proxy that routes each new client
// connection to a PostgreSQL member of a Patroni cluster by role, and closes
// exactly the connections whose member stopped qualifying.
//
// NewPlan is the pure routing decision for one port and one /cluster
// answer: which host:port backends take new connections (serving members
// with a role of the port, minus noloadbalance, minus replicas over
// max_lag_in_bytes or with unknown lag when a limit is set), which keep their
// connections, and whether the port refuses new ones. A port listing
// "leader" opens only while exactly one leader exists and serves (seed 004):
// with none or two, new connections are refused (at once, or after the
// port's hold_timeout if no topology routes them first: port.hold, woken
// by portState's changed epoch); existing ones stay unless their own
// backend lost the role, left running/streaming, went over
// the lag limit or vanished. Each backend owns a cut channel (a broadcast
// epoch): closing it ends exactly its connections.
//
// Proxy owns one patroni.Watcher per cluster, the listeners and the HTTP API
// (Handler). Least-connections counters live per port and backend and survive
// updates. A connect has connect_timeout and falls over to the next backend.
// Bytes are moved by internal/relay's event loops (forward.go; one loop per
// four CPUs, at least one, started by Start and stopped by Shutdown after
// the last connection): no goroutine per direction, EOF passed on as a
// half-close, at most one 32 KiB read held per direction while a peer does
// not take it. No goroutine waits for a relayed connection (conn.go): the
// loop reports its end (relay.Events), and a backend's cut reaches it
// through the backend's set of connections. Where the system has no epoll,
// a pump per direction copies with raw read and write system calls instead,
// and the goroutine that routed the connection waits for its end.
//
// A leader restarting in place (same member, leader key kept) is confirmed
// before /cluster says running once its own /patroni relays a live query
// out of recovery on a timeline not older than seen (liveleader.go).
//
// Convergence on the proxy's own evidence: a failed connect to the
// leader's backend, or a connection to it whose server side ends first
// (PostgreSQL closing sessions as it demotes), is a Trigger. The cluster then
// fetches /cluster at once and keeps re-polling every 250 ms until three
// answers in a row show the same members, roles and states with no new
// trigger in between and a single confirmed leader (without one, for at
// most 30 s after the last trigger: a leader restarting in place brings no
// traffic while the write port refuses). Extra load on Patroni is bounded by rate, not by the
// number of failing clients: at most one extra GET /cluster per 250 ms per
// cluster (patroni_proxy_fast_refreshes_total), plus the new leader's
// /patroni at the existing 100 ms recheck until it is confirmed.
//
// Staleness: when every Patroni URL fails, the last topology is trusted for
// max_topology_age (default max(30 s, 3 intervals): Patroni's default ttl,
// after which a leader that cannot renew its lock has demoted itself). Past
// that every port refuses new connections (reason stale_topology), existing
// connections are kept, an error is logged on every update interval, and
// patroni_proxy_topology_stale is 1, until a fetch succeeds again.
//
// Proxy methods are safe for concurrent use. The package does not pool, parse
// the PostgreSQL protocol or terminate TLS.
package proxy
