// Package fallback is pg_doorman's Patroni-assisted fallback: when the local
// PostgreSQL (usually a unix socket) stops answering, new server connections
// go to another member of the Patroni cluster until the local server is back.
//
// A Dialer (one per pool) wraps the pool's connect function. Connect tries
// the local Target unless it is in its cooldown; a transport failure
// (LocalDown) marks it down for fallback_cooldown and runs a fallback round:
// the host cached by the last round if any (one rediscovery if it fails),
// else GET /cluster (coalesced between concurrent callers), candidates
// filtered by state, tags and the per-host cooldown table, wave 1 = every
// sync standby in parallel, wave 2 = every other member in parallel, each
// start bounded by fallback_connect_timeout, first success wins and late
// successes are closed. Results carry the lifetime a fallback connection
// must get: fallback_lifetime, cut to what is left of the cooldown (at least
// MinLifetime), so that the pool comes back to the local server when the
// cooldown ends rather than up to one lifetime later.
//
// A Dialer is safe for concurrent use; Close waits for its background
// /cluster fetch. The connect function is injected, so the package knows
// server connections only as Conn (something to Close); it knows the
// backend package only to classify errors (LocalDown, ReasonOf). It does not
// pool, does not rewrite ParameterStatus and does not decide what the
// client is told: ClientMessage is a suggestion.
//
// Spec: seed 000 ("Fallback через Patroni"), changelog 3.6.0 of seed 002,
// https://patroni.readthedocs.io/en/latest/rest_api.html.
package fallback
