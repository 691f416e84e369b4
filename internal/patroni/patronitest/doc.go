// Package patronitest provides test doubles for code that talks to the
// Patroni REST API: Server, a fake Patroni instance on 127.0.0.1 (httptest)
// serving a settable /cluster body with injectable delay, status and
// per-request hook; ManualClock, a patroni.Clock whose tickers fire only when
// the test advances it; and CA, a throw-away certificate authority for TLS
// and client-certificate tests.
//
// Everything here is for tests only. Server and ManualClock are safe for
// concurrent use; a Server is closed by the test's Cleanup.
package patronitest
