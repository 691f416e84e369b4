// Package rolecheck decides whether a PostgreSQL server (or a pooler in front
// of it) currently has the role a load balancer route needs: primary, replica
// or any, optionally with a maximum replication lag.
//
// Check runs one check over our own wire connection (internal/protocol,
// internal/auth): with MethodHotStandby it sends a StartupMessage, logs in
// and reads the in_hot_standby ParameterStatus, running no query; with
// MethodRecovery it runs SELECT pg_is_in_recovery(). Either way it sends
// Terminate before closing, so the server logs no "connection reset". Probe
// returns the raw State and Evaluate (a pure function) turns a State into a
// Verdict, which is what the pgrole_check CLI maps to exit codes 0/1/2.
//
// Sidecar serves Patroni-shaped endpoints (/primary, /replica, /read-only,
// /health, ?lag=) for HAProxy httpchk from direct checks, with one probe per
// cache interval shared by all concurrent requests, and /metrics from its own
// Prometheus registry. HAProxyConfig renders ready HAProxy configurations:
// the tcp-check variants (startup packet as hex, expected in_hot_standby
// bytes, Terminate), the httpchk variant against the sidecar and the
// external-check variant, all with init-state down, shutdown-sessions and the
// nbsrv(...) eq 1 guard on the write port.
//
// Passwords are never logged nor put in errors. Check and Probe are safe for
// concurrent use; a Sidecar is safe for concurrent requests. The package does
// not choose a leader nor talk to Patroni: it reports what one server says.
//
// Spec: seeds 001 (HAProxy check variants), 003 and 004 (exactly one primary);
// https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-ASYNC
// (in_hot_standby, PostgreSQL 14+).
package rolecheck
