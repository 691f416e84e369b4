package pooler

import "sync/atomic"

// Stats are the cumulative counters of one pool, updated by sessions.
// Times are in microseconds, like PgBouncer's SHOW STATS.
type Stats struct {
	XactCount      atomic.Uint64
	QueryCount     atomic.Uint64
	BytesReceived  atomic.Uint64 // from clients
	BytesSent      atomic.Uint64 // to clients
	XactTime       atomic.Uint64
	QueryTime      atomic.Uint64
	WaitTime       atomic.Uint64
	WaitCount      atomic.Uint64
	WaitTimeouts   atomic.Uint64
	ServerErrors   atomic.Uint64 // server connections lost under a client
	ConnectErrors  atomic.Uint64
	ConnectRetries atomic.Uint64 // connects tried again after server_login_retry
	// RetryNotLeader: failed connects not tried again because the local
	// Patroni (server_login_retry_patroni) did not hold the leader lock or
	// did not answer.
	RetryNotLeader atomic.Uint64
	// ConnectInRecovery: new server connections closed because they came
	// up in recovery while the local Patroni held the leader lock.
	ConnectInRecovery atomic.Uint64
	// WaitsCanceled: waits for a server stopped by the client's cancel
	// request; the statement was answered 57014 and not sent.
	WaitsCanceled atomic.Uint64
	// LeftWhileWaiting: clients found gone (EOF, reset) when a server
	// came after a wait of 100 ms or more; their statements were not run.
	LeftWhileWaiting atomic.Uint64
	ClientsTotal     atomic.Uint64 // logins
	ClientsActive    atomic.Int64  // logged-in clients holding or waiting for a server
	ClientsWaiting   atomic.Int64  // clients queued in Acquire
	Clients          atomic.Int64  // logged-in clients

	// Prepared statements in transaction mode.
	PreparedHits            atomic.Uint64 // client Parse found in the pool cache
	PreparedMisses          atomic.Uint64 // client Parse new to the pool cache
	PreparedInjected        atomic.Uint64 // Parse sent for a server that lacked the statement
	PreparedClientEvictions atomic.Uint64 // client names evicted by client_prepared_statements_cache_size
	PreparedServerEvictions atomic.Uint64 // statements closed on a server to make room
	PreparedDeferred        atomic.Uint64 // Parse+Sync answered before any server accepted the statement
}
