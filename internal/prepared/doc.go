// Package prepared holds the bookkeeping that lets clients use named
// prepared statements in transaction mode, where consecutive transactions of
// one client run on different server connections.
//
// Three structures cooperate:
//   - Cache, one per pool, maps a statement's identity (query text,
//     parameter type OIDs and the session context that changes a plan's
//     meaning) to a *Statement with a pooler-generated server-side name.
//     It is bounded (prepared_statements_cache_size and CacheBytes, LRU);
//     eviction only removes the entry from the shared index: clients that
//     hold the Statement keep using it, so nothing is evicted out from under
//     them. Remove drops an entry a server rejected.
//   - ClientMap, one per client, maps the client's own statement names to
//     Statements, bounded by client_prepared_statements_cache_size (0 = no
//     count bound) and ClientBytes, LRU.
//   - ServerSet, one per server connection, is the set of Statements
//     prepared there (bounded by count and ServerBytes, LRU; the caller
//     sends Close for each evicted one).
//
// Every byte bound counts what an entry keeps alive (Statement.Size) and
// never evicts the entry just added.
//
// Cache is safe for concurrent use. ClientMap is owned by one session
// goroutine; ServerSet by whoever owns the server connection at the moment
// (the session's lock guards it while a client is attached). A Statement is
// immutable after creation.
package prepared
