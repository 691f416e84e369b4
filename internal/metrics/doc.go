// Package metrics is pg_doorman's Prometheus exporter: it serves /metrics
// with the families named in the Prometheus reference of the documentation
// (seed 002), plus counters for the failure paths the reference is silent
// about.
//
// Metrics owns its own prometheus.Registry (never the global one) holding
// the Go and process collectors, a collector that reads the daemon's live
// state at scrape time (pool counters are atomics, server counts come from a
// pool.Stats snapshot, so the hot path never touches a gauge), and
// CounterVecs for events that leave no trace in that state: login
// failures, refused connections, server connections lost under a client.
// The session and daemon packages call the event methods (ClientLogin,
// LoginFailure, ServerLost, Rejected, ClientConnection, MemoryReturned)
// through the
// session.Metrics and daemon.Metrics interfaces, the admin console
// AdminCommandFailed through admin.Metrics; daemon.New builds the
// exporter through daemon.Parts. The syslog logger exists before the
// exporter: RegisterSyslog adds its counts (logging.SyslogCounts), read at
// scrape time.
//
// Everything is safe for concurrent use. The package does not decide
// whether the endpoint is enabled, nor where it listens: the caller passes
// the address from the prometheus section of the configuration.
//
// Families and their labels are listed in docs/metrics.md (TestFamiliesDoc
// keeps it equal to a scrape).
//
// Spec: seed 002, "Настройки Prometheus" and "Перцентили задержек";
// https://prometheus.io/docs/practices/naming/.
package metrics
