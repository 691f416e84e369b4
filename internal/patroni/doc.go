// Package patroni reads cluster topology from the Patroni REST API
// (https://patroni.readthedocs.io/en/latest/rest_api.html, GET /cluster).
//
// ParseCluster decodes a /cluster answer into a Cluster of Members with typed
// Role, State, lag and Tags. Client fans GET /cluster out to every configured
// URL in parallel (go-retryablehttp, few retries, each URL bounded by one
// timeout, body capped through io.LimitReader) and takes the first parseable
// answer. Watcher polls a Client and publishes immutable Topology snapshots,
// dropping any answer whose fetch started before the one already applied.
//
// Roles and states: "master"/"primary" are read as leader; a standby_leader is
// never a writable leader. State.Serving accepts "running" (Patroni 3.0.x
// replicas too) and the 3.0.4+ replica states "streaming" and "in archive
// recovery". Captures from a real cluster show what routing must tolerate: no
// leader at all for 0.1-0.4 s in a switchover and for the whole of a paused
// cluster whose primary died; a dead leader (node loss) kept as
// "leader/running" for up to the TTL before it vanishes; a crashed leader as
// "leader/crashed" then "leader/starting"; timeline missing while postgres is
// down or demoting; lag "unknown" on a stopped, starting or just-demoted member.
//
// Values returned (Cluster, Topology) are never mutated after publication and
// may be shared between goroutines. Client and Watcher are safe for concurrent
// use. The package does not dial PostgreSQL, does not choose backends and does
// not log: errors are returned, metrics go through the Observer hook.
package patroni
