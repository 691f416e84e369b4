// Package authquery looks up the password verifiers of users a pool does
// not list, in PostgreSQL itself, for pools with an auth_query block (seed
// 002, "auth_query" and "Настройки auth_query").
//
// A Resolver serves one database: its Executor runs the lookup query on at
// most `workers` connections of its own (a hard limit on concurrent
// lookups; each connection is opened at start and reopened when it
// breaks), and its Cache keeps the answers: a found verifier for
// cache_ttl, "no such user" for cache_failure_ttl (so a flood of wrong
// names does not become a flood of queries), one query per user name at a
// time however many logins wait for it (single flight), and at most one
// re-fetch per min_interval after a failed authentication (a password
// changed in PostgreSQL is picked up at once, a brute-force attempt does
// not turn into queries). When PostgreSQL cannot answer, a cached verifier
// is used even past its TTL; a user never seen gets an error.
//
// Memory is bounded by MaxEntries per cache and by the row and byte bounds
// of one lookup result, never by what clients send. Stats are atomics read
// by SHOW AUTH_QUERY and the metrics exporter.
//
// Everything here is safe for concurrent use. The package does not
// authenticate clients (the session runs MD5/SCRAM against the verifier
// returned) and does not own the dynamic pools (package pooler does).
package authquery
