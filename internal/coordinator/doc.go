// Package coordinator enforces max_db_connections for one database across
// all the user pools that serve it (the "Pool Coordinator" of pg_doorman).
//
// A Coordinator owns two counting semaphores: main (max_db_connections) and
// reserve (reserve_pool_size). Each user pool registers as a Member and gets
// a *User handle. A pool asks for a *Permit just before it connects to the
// backend (inside its burst-gate slot) and calls Permit.Release when that
// backend connection is physically closed, not when it goes back to idle.
//
// User.Acquire runs the phases of the spec in order: A try-acquire main,
// R reserve-first, B evict one idle connection from the donor with the
// highest cached p95 transaction time (spare above its effective minimum as
// tiebreaker, never below that minimum), C wait up to reserve_pool_timeout
// for a released permit or an idle return (cheap path before eviction),
// D reserve retry, E *ExhaustedError. The reserve arbiter is not a goroutine:
// a freed slot is handed directly to the highest-ranked waiter, ranked by
// (starving, queued clients) and then arrival order, under the coordinator's
// mutex. Permit.Upgrade / UpgradeReserve move idle reserve permits to main
// when main has room (called by the retain task).
//
// The package knows nothing of the wire or of pool internals: it sees pools
// only through Member, and time only through Clock, so every phase can be
// tested deterministically (see package coordtest). It starts no goroutines.
// All methods are safe for concurrent use. Member methods are never called
// with the coordinator's lock held, so a Member may call Permit.Release and
// User.NotifyIdleReturn while holding its own lock.
//
// Spec: seed 002, sections "Pool Coordinator" and "Давление на пул".
package coordinator
