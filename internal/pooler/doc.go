// Package pooler maps (database, user) to a server connection pool and
// builds those pools from the configuration.
//
// A Registry holds one Pool per configured (database, user) pair. Each Pool
// wraps a pool.Pool of backend connections, knows how to open them (server
// address, server user, and the credentials for passthrough or an explicit
// server_password) and keeps the per-pool statistics that SHOW POOLS, SHOW
// STATS and the Prometheus exporter read. Apply swaps in a new configuration
// on reload: new pools appear, removed ones are closed, resized ones keep
// their connections.
//
// Databases with auth_query also get a resolver (package authquery, built
// afresh on every Apply, so the cache starts empty) and pools made on
// demand by AuthQueryPool: one per looked-up user in passthrough mode, one
// shared server_user pool in dedicated mode. Lookup never returns those
// (their logins go through the resolver); Pools lists them; the retain
// cycle collects the unused ones.
//
// Everything here is safe for concurrent use. Counters are atomics updated
// by the sessions on the hot path; the current configuration of a pool is an
// atomic pointer, replaced as a whole on reload, never mutated in place.
package pooler
