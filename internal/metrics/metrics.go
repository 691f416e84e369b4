package metrics

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/session"
)

var (
	_ session.Metrics            = (*Metrics)(nil)
	_ session.ParamSyncMetrics   = (*Metrics)(nil)
	_ session.ClientWriteMetrics = (*Metrics)(nil)
	_ session.TLSMetrics         = (*Metrics)(nil)
)

// Kinds of client connection counted by ClientConnection, the type label
// of pg_doorman_connection_count (its "total" is their sum).
const (
	ConnPlain  = "plain"
	ConnTLS    = "tls"
	ConnCancel = "cancel"
)

// Metrics exports pg_doorman's state.
type Metrics struct {
	d       *daemon.Daemon
	reg     *prometheus.Registry
	handler http.Handler

	logins        *prometheus.CounterVec
	loginFailures *prometheus.CounterVec
	serverLost    *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	acceptErrors  *prometheus.CounterVec
	clientErrors  *prometheus.CounterVec
	clientWrites  *prometheus.CounterVec
	cancels       *prometheus.CounterVec
	acquireFails  *prometheus.CounterVec
	coreHandBacks *prometheus.CounterVec
	coreFailures  *prometheus.CounterVec
	paramSync     *prometheus.CounterVec
	tlsHandshakes *prometheus.CounterVec
	tlsFailures   *prometheus.CounterVec
	scramAuth     *prometheus.CounterVec
	adminFailures *prometheus.CounterVec
	serverTLS     *serverTLS
	memReturns    prometheus.Counter
	memReturned   prometheus.Counter

	// Client connections by kind since start, for pg_doorman_connection_count.
	plain, tls, cancel, other atomic.Uint64
}

// New builds the exporter and its registry. It registers nothing globally
// and starts no goroutine.
func New(d *daemon.Daemon) *Metrics {
	m := &Metrics{d: d, reg: prometheus.NewRegistry()}
	m.logins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_client_logins_total",
		Help: "Clients that completed login to a pool, by user and database.",
	}, []string{"user", "database"})
	m.loginFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_client_login_failures_total",
		Help: "Client logins refused, by reason (protocol, hba, password, no_user, no_password, no_database, no_pool, admin, server_login, tls, tls_required, auth_query, jwt, talos, pam, timeout: client_login_timeout ran out).",
	}, []string{"reason"})
	m.serverLost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_server_connections_lost_total",
		Help: "Server connections that failed while a client was using them, by user and database.",
	}, []string{"user", "database"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_client_connections_rejected_total",
		Help: "Client connections refused before startup, by reason (max_connections).",
	}, []string{"reason"})
	m.acceptErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_accept_errors_total",
		Help: "Failed accepts of client connections, by reason: fd_limit (EMFILE or ENFILE: out of file descriptors; the connection waits in the listen queue) or other. pg_doorman backs off up to 1 s after each.",
	}, []string{"reason"})
	for _, r := range []string{"fd_limit", "other"} {
		m.acceptErrors.WithLabelValues(r)
	}
	m.memReturns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pg_doorman_memory_returns_total",
		Help: "Times pg_doorman gave free heap back to the OS after it went quiet (a garbage collection, then a release; internal/memreturn).",
	})
	m.memReturned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pg_doorman_memory_returned_bytes_total",
		Help: "Bytes of free heap those returns released to the OS.",
	})
	m.paramSync = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_server_parameter_sync_failures_total",
		Help: "SETs of a client's parameter (application_name, TimeZone, ...) the server rejected, by user, database and parameter; the parameter is then not set again for that client.",
	}, []string{"user", "database", "parameter"})
	// Start the known reasons at zero so that rate() and alerts see the
	// series before the first event. Other reasons are counted too.
	for _, r := range []string{"admin", "hba", "no_pool", "no_password", "password", "server_login"} {
		m.loginFailures.WithLabelValues(r)
	}
	m.clientErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_client_errors_total",
		Help: "Faults of logged-in clients that pg_doorman answered itself, by reason (protocol_violation, message_too_large, message_timeout, max_memory_usage).",
	}, []string{"reason"})
	m.rejected.WithLabelValues("max_connections")
	for _, r := range []string{"protocol_violation", "message_too_large", "message_timeout", "max_memory_usage"} {
		m.clientErrors.WithLabelValues(r)
	}
	m.clientWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_client_write_failures_total",
		Help: "Writes to a logged-in client that failed during a transaction (the client is gone), by what became of the server connection: closed (the answer was cut, the connection cannot be reused) or kept (it went back to the pool before the answer was written).",
	}, []string{"server"})
	for _, r := range []string{"closed", "kept"} {
		m.clientWrites.WithLabelValues(r)
	}
	m.cancels = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_cancel_requests_total",
		Help: "Cancel requests by what became of them: forwarded (sent to the server the client holds), answered (the client was waiting for a server: its statement was cancelled here), failed (the server could not be reached), nothing (the client holds no server or is leaving), unknown (no client has that key).",
	}, []string{"result"})
	for _, r := range []string{"forwarded", "answered", "failed", "nothing", "unknown"} {
		m.cancels.WithLabelValues(r)
	}
	m.acquireFails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_transaction_acquire_failures_total",
		Help: "Logged-in clients ended because their transaction got no server connection, by reason: wait_timeout (query_wait_timeout), db_limit (max_db_connections), fallback (the Patroni fallback found no server), pool_closed (the pool was removed or is shutting down), server_error (PostgreSQL refused the login), server_tls, no_scram_key (SCRAM passthrough without the client's keys), shutdown, connect (no connection could be made).",
	}, []string{"reason"})
	for _, r := range session.AcquireFailureReasons {
		m.acquireFails.WithLabelValues(r)
	}
	m.coreHandBacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_transaction_core_handbacks_total",
		Help: "Clients the transaction core (general.transaction_loop) handed back to a goroutine, by reason: split_message (a message not whole in one read), message (not a request at a transaction's start, or invalid), canceled (a cancelled wait), migrate (binary upgrade), tls_server (a server with TLS), no_wait (query_wait_timeout 0).",
	}, []string{"reason"})
	for _, r := range []string{"split_message", "message", "canceled", "migrate", "tls_server", "no_wait"} {
		m.coreHandBacks.WithLabelValues(r)
	}
	m.coreFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_transaction_core_failures_total",
		Help: "Failures of the transaction core's own that ended a client, by operation: register_client, register_server (the epoll set refused a socket), loop (the loop stopped: its clients were ended).",
	}, []string{"op"})
	for _, r := range []string{"register_client", "register_server", "loop"} {
		m.coreFailures.WithLabelValues(r)
	}
	m.tlsHandshakes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_tls_handshakes_total",
		Help: "Client TLS handshakes (after an SSLRequest or direct TLS), by result (ok, failed).",
	}, []string{"result"})
	m.tlsFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_tls_handshake_failures_total",
		Help: "Client TLS handshakes that failed, by reason (timeout, client_closed, not_tls, no_client_certificate, bad_client_certificate, protocol_version, no_shared_cipher, alpn, no_alpn, client_alert, queue_timeout, other).",
	}, []string{"reason"})
	m.scramAuth = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_client_scram_auth_total",
		Help: "Clients that pg_doorman authenticated with SCRAM, by mechanism (SCRAM-SHA-256, SCRAM-SHA-256-PLUS).",
	}, []string{"mechanism"})
	for _, r := range []string{"ok", "failed"} {
		m.tlsHandshakes.WithLabelValues(r)
	}
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-256-PLUS"} {
		m.scramAuth.WithLabelValues(mech)
	}
	for _, r := range []string{"timeout", "bad_client_certificate", "no_client_certificate", "queue_timeout"} {
		m.tlsFailures.WithLabelValues(r)
	}
	m.adminFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pg_doorman_admin_command_failures_total",
		Help: "Admin console commands refused or failed, by reason: syntax (not a command, bad arguments), extended_protocol, protocol (a message that ended the session), no_database, not_allowed (an admin database, a setting only the config file changes), unknown_parameter, invalid_value, unsupported, reload_failed, upgrade_in_progress, other.",
	}, []string{"reason"})
	// The reasons of package admin (admin.FailureReasons; its test checks
	// they are all here).
	for _, r := range []string{"syntax", "extended_protocol", "protocol", "no_database", "not_allowed", "unknown_parameter",
		"invalid_value", "unsupported", "reload_failed", "upgrade_in_progress", "other"} {
		m.adminFailures.WithLabelValues(r)
	}
	m.serverTLS = newServerTLS()
	m.reg.MustRegister(m.serverTLS.collectors()...)
	d.Pools.SetServerTLSObserver(m.serverTLS)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.logins, m.loginFailures, m.serverLost, m.rejected, m.acceptErrors, m.clientErrors, m.clientWrites, m.cancels, m.acquireFails, m.coreHandBacks, m.coreFailures, m.paramSync,
		m.tlsHandshakes, m.tlsFailures, m.scramAuth, m.memReturns, m.memReturned, m.adminFailures,
		&daemonCollector{m: m},
		newPoolCollector(d),
		coordinatorCollector{d},
		authQueryCollector{d},
		newSocketCollector(),
	)
	lock := d.Pools.LeaderLockStats()
	for _, r := range []struct {
		result string
		n      *atomic.Uint64
	}{{"held", &lock.Held}, {"not_held", &lock.NotHeld}, {"error", &lock.Errors}} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "pg_doorman_patroni_leader_lock_checks_total",
			Help:        "GET /primary requests to the local Patroni of server_login_retry_patroni, by result (held = 200, not_held = 503, error = no answer or another status).",
			ConstLabels: prometheus.Labels{"result": r.result},
		}, func() float64 { return float64(r.n.Load()) }))
	}
	m.handler = promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg,
		ErrorHandling: promhttp.ContinueOnError,
	}))
	return m
}

// Registry is the registry the exporter serves; callers may register more
// collectors on it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler { return m.handler }

// ClientLogin counts a client that completed login (session.Metrics).
func (m *Metrics) ClientLogin(db, user string) { m.logins.WithLabelValues(user, db).Inc() }

// LoginFailure counts a refused login by reason (session.Metrics).
func (m *Metrics) LoginFailure(reason string) { m.loginFailures.WithLabelValues(reason).Inc() }

// ServerLost counts a server connection lost under a client
// (session.Metrics).
func (m *Metrics) ServerLost(db, user string) { m.serverLost.WithLabelValues(user, db).Inc() }

// ClientError counts a logged-in client's fault answered by pg_doorman
// (session.Metrics).
func (m *Metrics) ClientError(reason string) { m.clientErrors.WithLabelValues(reason).Inc() }

// ClientWriteFailed counts a failed write to a logged-in client during a
// transaction (session.ClientWriteMetrics).
func (m *Metrics) ClientWriteFailed(server string) { m.clientWrites.WithLabelValues(server).Inc() }

// CancelRequest counts a cancel request by its result
// (session.CancelMetrics).
func (m *Metrics) CancelRequest(result string) { m.cancels.WithLabelValues(result).Inc() }

// AcquireFailed counts a logged-in client ended for want of a server
// connection (session.AcquireMetrics).
func (m *Metrics) AcquireFailed(reason string) { m.acquireFails.WithLabelValues(reason).Inc() }

// CoreHandBack counts a client the transaction core handed back to a
// goroutine (session.CoreMetrics).
func (m *Metrics) CoreHandBack(reason string) { m.coreHandBacks.WithLabelValues(reason).Inc() }

// CoreFailure counts a failure of the transaction core's own
// (session.CoreMetrics).
func (m *Metrics) CoreFailure(op string) { m.coreFailures.WithLabelValues(op).Inc() }

// ParamSyncFailed counts a client parameter the server rejected
// (session.ParamSyncMetrics).
func (m *Metrics) ParamSyncFailed(db, user, param string) {
	m.paramSync.WithLabelValues(user, db, param).Inc()
}

// Rejected counts a client connection refused before startup, such as over
// max_connections (daemon.Metrics.Rejected).
func (m *Metrics) Rejected(reason string) { m.rejected.WithLabelValues(reason).Inc() }

// AcceptFailed counts a failed accept by reason (daemon.Metrics).
func (m *Metrics) AcceptFailed(reason string) { m.acceptErrors.WithLabelValues(reason).Inc() }

// MemoryReturned counts a return of free heap to the OS and its bytes
// (daemon.Metrics.MemoryReturned).
func (m *Metrics) MemoryReturned(bytes uint64) {
	m.memReturns.Inc()
	m.memReturned.Add(float64(bytes))
}

// ClientConnection counts a new client connection once its first packet
// has told what it is: ConnPlain, ConnTLS or ConnCancel. Other kinds only
// count towards type="total".
func (m *Metrics) ClientConnection(kind string) {
	switch kind {
	case ConnPlain:
		m.plain.Add(1)
	case ConnTLS:
		m.tls.Add(1)
	case ConnCancel:
		m.cancel.Add(1)
	default:
		m.other.Add(1)
	}
}

// ConnectionCounts returns the client connections counted by
// ClientConnection since start, by kind (the admin console's SHOW
// CONNECTIONS): other is every kind but the three named ones.
func (m *Metrics) ConnectionCounts() (plain, tls, cancel, other uint64) {
	return m.plain.Load(), m.tls.Load(), m.cancel.Load(), m.other.Load()
}

// TLSHandshake counts a client TLS handshake, reason "" when it succeeded
// (session.TLSMetrics). A queue timeout counts as a failed handshake too.
func (m *Metrics) TLSHandshake(reason string) {
	if reason == "" {
		m.tlsHandshakes.WithLabelValues("ok").Inc()
		return
	}
	m.tlsHandshakes.WithLabelValues("failed").Inc()
	m.tlsFailures.WithLabelValues(reason).Inc()
}

// AdminCommandFailed counts an admin console command refused or failed, by
// reason (admin.Metrics).
func (m *Metrics) AdminCommandFailed(reason string) { m.adminFailures.WithLabelValues(reason).Inc() }

// SCRAMAuth counts a successful SCRAM exchange with a client by mechanism
// (session.TLSMetrics).
func (m *Metrics) SCRAMAuth(mechanism string) { m.scramAuth.WithLabelValues(mechanism).Inc() }
