// Package memlimit is pg_doorman's global budget for message buffers
// (general.max_memory_usage): the bytes of client and server messages that
// sessions hold in memory beyond their fixed per-connection buffers.
//
// A Budget is a limit and an atomic counter of bytes in use. Sessions ask
// for bytes with TryAcquire before they grow a buffer for a large message
// and give them back with Release once the buffer has shrunk; an Account
// does that bookkeeping for one buffer whose size changes. When a request
// does not fit, TryAcquire refuses and counts the refusal: what happens then
// (stream the message instead of buffering it, or refuse the client's
// request with an error) is the caller's decision, not this package's.
//
// Everything is safe for concurrent use. The package allocates nothing,
// starts no goroutine and does not log.
//
// Spec: seed 002, max_memory_usage in the settings reference.
package memlimit
