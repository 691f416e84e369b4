package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/auth/hba"
	"github.com/doorman-go/doorman/internal/auth/pam"
	"github.com/doorman-go/doorman/internal/clienttls"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/fdconn"
	"github.com/doorman-go/doorman/internal/idlepark"
	"github.com/doorman-go/doorman/internal/memlimit"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// MaxClientMessage bounds one client message (PostgreSQL's own limit).
const MaxClientMessage = protocol.DefaultMaxMessageLength

// AdminDatabases are the virtual databases of the admin console.
var AdminDatabases = map[string]bool{"pgdoorman": true, "pgbouncer": true}

// Env is what sessions share with the daemon.
type Env struct {
	Pools   *pooler.Registry
	Clients *Registry
	Log     *zap.Logger
	// HBA returns the pg_hba rules in force, nil when none are configured.
	HBA func() *hba.Rules
	// Admin runs the admin console for an authenticated admin session.
	Admin func(ctx context.Context, s *Session) error
	// Metrics hooks may be nil.
	Metrics Metrics
	// Memory is the max_memory_usage budget of message buffers; nil means
	// no limit.
	Memory *memlimit.Budget
	// TLS is the client-side TLS; nil, or a Server that is not Enabled,
	// answers every SSLRequest with 'N'.
	TLS *clienttls.Server
	// Parker holds idle plaintext clients without a goroutine; nil keeps
	// a goroutine per client.
	Parker *idlepark.Parker
	// Core runs the transactions of plaintext transaction-mode clients on
	// one event loop (core_linux.go); nil keeps them in goroutines.
	Core *Core
	// ConfigureSocket sets the configured TCP options of a client socket.
	// A parked client's socket is made a net.Conn again when it resumes
	// (net.FileConn, which sets Go's own TCP_NODELAY and keepalive), and
	// this puts the configured ones back. Nil: nothing to set.
	ConfigureSocket func(net.Conn)
	// PAM checks the passwords of users with auth_pam_service; nil in a
	// build without PAM (config refuses the key there).
	PAM *pam.Authenticator

	// tracked is the sessions' shared snapshot of welcome parameters
	// (trackedRef); its zero value is ready.
	tracked trackedShare
}

// Metrics receives session events for Prometheus.
type Metrics interface {
	ClientLogin(db, user string)
	LoginFailure(reason string)
	ServerLost(db, user string)
	// ClientConnection counts a client connection by kind once its first
	// packet is known: "plain", "tls" or "cancel".
	ClientConnection(kind string)
	// ClientError counts a logged-in client's fault that pg_doorman
	// answered itself: "protocol_violation", "message_too_large",
	// "message_timeout", "max_memory_usage".
	ClientError(reason string)
}

// CoreMetrics counts for the transaction core (NewCore) what it hands back
// to a goroutine, by reason (split_message, message, canceled, migrate,
// tls_server, no_wait), and its own failures, by operation
// (register_client, register_server, loop).
type CoreMetrics interface {
	CoreHandBack(reason string)
	CoreFailure(op string)
}

// State of a client for SHOW CLIENTS.
const (
	StateLogin   = "login"
	StateIdle    = "idle"
	StateActive  = "active"
	StateWaiting = "waiting"
)

// Session is one client connection.
type Session struct {
	ID          uint64
	Database    string
	User        string
	AppName     string
	ConnectedAt time.Time
	RemoteAddr  net.Addr
	Local       bool // came in on the unix socket
	Admin       bool
	// parkedDeep: the session has been parked deep at least once (park),
	// under mu; here for the padding before env.
	parkedDeep bool
	// cancelsInFlight counts what cancels counts, under mu, for the
	// transaction core, which must not wait on cancels in its loop; here
	// for the padding too.
	cancelsInFlight int32

	env *Env
	// nc is the client connection: raw itself, or after a TLS handshake
	// the *tls.Conn over raw. Socket options (linger, TIOCINQ) go to raw.
	nc    net.Conn
	raw   net.Conn
	crd   *protocol.Reader
	pool  *pooler.Pool
	state atomic.Value // string

	wmu sync.Mutex // serialises writes to nc

	mu      sync.Mutex
	srv     *pooler.Conn  // attached server connection, nil between transactions
	srvDone chan struct{} // serverLoop's; nil while the client loop drives srv itself (or no srv)
	pending int           // Query/Sync/FunctionCall sent and not yet answered by ReadyForQuery
	driving bool          // the client loop is in pumpServer for srv (Kill aborts srv)
	partial bool          // extended-protocol messages sent after the last Sync
	closing bool          // the client is gone: serverLoop must not release into a session
	killed  bool
	wake    bool // serverLoop must emit fake answers now (see rw)
	// lastWait: how the last Acquire got its server (acquireWait, owned
	// by the client loop): a long wait makes attach look at the client, a
	// queued one makes flushRequest read before it waits for the answer.
	// Here, with skipToSync, in the padding after the flags above.
	lastWait   acquireWait
	skipToSync bool // a refused extended-protocol message: drop messages up to Sync (owned by the client loop)
	// waiting: the client waits for a server (pooler.Waiter); a cancel
	// request then sends on waitStop, under mu. waitStop is made at the
	// session's first wait and reused.
	waiting  bool
	waitStop chan struct{}
	// cancels counts cancel requests being forwarded to srv; Add only
	// under mu while srv is attached, Wait before srv goes back to the pool.
	cancels sync.WaitGroup
	// Since ConnectedAt (its monotonic clock): a Duration is a third of a
	// time.Time, and every idle client keeps these. xactStart is the start
	// of the client's latest transaction, and while it waits for a server
	// (waiting) the start of that wait; queryStart that of its latest query.
	xactStart  time.Duration
	queryStart time.Duration

	// Prepared statements in transaction mode (nil = pass through), under
	// mu: the client loop writes, serverLoop reads the answers.
	rw *rewriter

	// Lifecycle, owned by whichever goroutine runs the session: Serve's,
	// then after each park the one that resumes it.
	ended      func() // Serve's argument, called once at the very end
	registered bool   // in env.Clients
	counted    bool   // in the pool's client count
	parked     bool   // under mu: held by env.Parker, no goroutine
	resumed    bool   // woken by the Parker: the next read does not wait
	fresh      bool   // the next read is the first after the welcome (see peekClient)
	// While parked, crd is nil and a blank rw is dropped (rwParked says
	// there was one): resume makes new ones, so that an idle client keeps
	// neither (see park).
	rwParked bool
	// releaseShift: the client's release is idleRelease << releaseShift
	// (adaptRelease). Written under mu by the goroutine that resumes the
	// session, before it runs the client loop, which reads it.
	releaseShift uint8
	// slow: the client's last wait between transactions outlasted its
	// release, so the next one starts without the read buffer (peekClient).
	// Written by the client loop under mu (setSlow), read by it without.
	slow bool

	// Binary upgrade: migrateTo (under mu) takes the client at its next
	// idle point; migrating mirrors migrateTo != nil for the client loop's
	// cheap check.
	migrateTo Migrator
	migrating atomic.Bool

	// lastWord: a FATAL error was sent, close gracefully.
	lastWord atomic.Bool

	// authReason is the login failure reason counted when the password
	// check fails: "" means "password"; set for mock exchanges.
	authReason string

	// Set by the TLS handshake during startup, read-only afterwards; nil
	// for a plaintext client (most of them: a pointer, not three fields,
	// in every idle client).
	tls *tlsState

	cancelPID, cancelSecret uint32
	clientParams            map[string]string // what the client is told in the welcome; nil after it
	tracked                 trackedRef        // what the client has been told, of the parameters that matter after the welcome
	params                  paramSync         // SETs of tracked ahead of the client's messages

	// Owned by the client loop; nil before the loop starts and while
	// parked.
	*clientRead
}

// clientRead is what reading the client takes while the client loop runs,
// apart from the Reader itself: made by startRun and resume, dropped by
// park, so that an idle client does not keep it. Its fields are promoted
// (s.guard, s.cmem).
type clientRead struct {
	guard stallGuard       // under crd: bounds a message's reads once it has begun
	cmem  memlimit.Account // crd's grown buffer against max_memory_usage
}

// logger is the session's logger, with its id, user and database once
// known. It is built when a line is logged, not kept: a kept zap.Logger
// With fields holds its encoder's buffer (1 KiB), which an idle client
// should not pay for, and sessions log rarely.
func (s *Session) logger() *zap.Logger {
	if !s.registered {
		return s.env.Log
	}
	return s.env.Log.With(zap.Uint64("session", s.ID), zap.String("user", s.User), zap.String("database", s.Database))
}

// State returns the client's state for SHOW CLIENTS.
func (s *Session) State() string {
	v, _ := s.state.Load().(string)
	return v
}

// Parked reports whether the client waits in Env.Parker, without a
// goroutine.
func (s *Session) Parked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Idle in the transaction core is parked too: no goroutine, no buffer.
	return s.parked || s.coreLocked() != nil && s.srv == nil && s.State() == StateIdle
}

// ServerPID returns the PID of the attached server connection, 0 if none.
func (s *Session) ServerPID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return 0
	}
	return s.srv.Value.PID
}

// CancelKey is the key pg_doorman gave the client in BackendKeyData.
func (s *Session) CancelKey() (pid, secret uint32) { return s.cancelPID, s.cancelSecret }

// Conn returns the client socket (admin console).
func (s *Session) Conn() net.Conn {
	s.mu.Lock() // park and resume swap nc under mu
	defer s.mu.Unlock()
	return s.nc
}

// Reader returns the client Reader (admin console).
func (s *Session) Reader() *protocol.Reader { return s.crd }

// Write writes bytes to the client under the write lock.
func (s *Session) Write(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.nc.Write(b)
	return err
}

// writeAwait is Write for a challenge of the auth exchange, whose answer
// the session reads next: it returns once the client has sent something
// (rawio.Conn.WriteAwaitInput), so that the read does not first find the
// socket empty, one system call and one more wake-up per challenge. The
// write lock is not held while it waits (Kill writes its last word
// meanwhile; rawio.Conn serialises the two writes). Over TLS, or with
// bytes of the client's already buffered, it is Write.
func (s *Session) writeAwait(b []byte) error {
	s.wmu.Lock()
	nc := s.nc
	s.wmu.Unlock()
	rc, ok := nc.(*rawio.Conn)
	if !ok || (s.crd != nil && s.crd.Buffered() > 0) {
		return s.Write(b)
	}
	_, err := rc.WriteAwaitInput(b)
	return err
}

// Kill sends a FATAL error to the client and closes its socket.
func (s *Session) Kill(code, msg string) {
	s.mu.Lock()
	s.killed = true
	if cl := s.coreLocked(); cl != nil {
		// The core's loop owns the socket: it writes the last word.
		s.killCoreLocked(cl, code, msg)
		s.mu.Unlock()
		return
	}
	if ps, ok := s.raw.(*parkedSocket); ok && s.parked {
		// Parked deep: take the socket back from the Parker first (its wake
		// may already wait for mu), then the last word, which a parked
		// socket writes without waiting, and the close, all before
		// resume can run: it finds the socket closed and ends the
		// session.
		if s.env.Parker != nil {
			s.env.Parker.Unpark(ps)
		}
		_, _ = ps.Write(protocol.AppendError(nil, "FATAL", code, msg))
		_ = ps.Close()
		s.mu.Unlock()
		return
	}
	nc := s.nc // resume swaps it under mu
	if s.parked && s.env.Parker != nil {
		// Take the socket back first: the Parker owns it while parked.
		// The session resumes, finds the socket closed and ends.
		if sc, ok := s.raw.(syscall.Conn); ok {
			s.env.Parker.Unpark(sc)
		}
	}
	var driven *pooler.Conn
	if s.driving {
		// The client loop waits on the server, not the client: closing
		// the client socket alone would go unnoticed until the server
		// answers. The server connection cannot be reused now anyway.
		driven = s.srv
		s.closing = true
	}
	s.mu.Unlock()
	if driven != nil {
		defer func() { _ = driven.Value.Abort() }()
	}
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_ = s.Write(protocol.AppendError(nil, "FATAL", code, msg))
	if tc, ok := tcpClient(s.raw); ok {
		// A graceful close, so the client reads the error before the
		// connection ends (tcp_so_linger 0 would send a reset).
		_ = rawio.SetLinger(tc, -1)
	}
	_ = nc.Close()
}

// Serve runs a client connection to its end. It closes nc and then calls
// ended, once. A client that sits idle may be parked (Env.Parker): Serve
// then returns early and the session goes on, and ends, in another
// goroutine.
func Serve(ctx context.Context, env *Env, nc net.Conn, ended func()) {
	s := &Session{env: env, nc: rawio.Wrap(nc), raw: nc, ConnectedAt: time.Now(), RemoteAddr: nc.RemoteAddr(), ended: ended}
	_, s.Local = nc.(*net.UnixConn)
	s.state.Store(StateLogin)
	s.end(s.serve(ctx))
}

// end finishes the session after serve or run returned err, unless the
// client was parked.
func (s *Session) end(err error) {
	if errors.Is(err, errParked) {
		return
	}
	if s.counted {
		// The line is written before the count drops, so that whoever
		// sees the pool's client count fall can rely on it being logged.
		if s.general().LogClientDisconnections && !errors.Is(err, errMigrated) {
			s.logger().Info("client disconnected", zap.Stringer("addr", s.RemoteAddr), zap.Duration("session_time", time.Since(s.ConnectedAt)))
		}
		s.pool.Stats.Clients.Add(-1)
	}
	if s.registered {
		s.env.Clients.remove(s)
	}
	s.close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errClientGone) && !errors.Is(err, errMigrated) {
		s.logger().Debug("client session ended", zap.Stringer("addr", s.RemoteAddr), zap.Error(err))
	}
	if s.ended != nil {
		s.ended()
	}
}

var errClientGone = errors.New("client disconnected")

func (s *Session) serve(ctx context.Context) error {
	_ = s.nc.SetDeadline(s.loginDeadline())
	sm, err := s.readStartup(ctx)
	if err != nil || sm == nil {
		return s.loginEnded(err, false)
	}
	s.Database = sm.Parameters["database"]
	if s.Database == "" {
		s.Database = sm.Parameters["user"]
	}
	s.User = sm.Parameters["user"]
	s.AppName = sm.Parameters["application_name"]
	s.env.Clients.add(s)
	s.registered = true

	if AdminDatabases[s.Database] {
		return s.serveAdmin(ctx)
	}
	if err := s.login(ctx, sm); err != nil {
		return s.loginEnded(err, true)
	}
	_ = s.nc.SetDeadline(time.Time{})
	if s.general().LogClientConnections {
		s.logger().Info("client connected", zap.Stringer("addr", s.RemoteAddr), zap.String("application_name", s.AppName),
			zap.String("tls", s.TLS()), zap.String("client_certificate", s.tlsPeer()))
	}
	s.pool.Stats.Clients.Add(1)
	s.counted = true
	return s.startRun(ctx)
}

// loginDeadline is when the client's login must be done
// (client_login_timeout after it connected); zero when there is no limit.
func (s *Session) loginDeadline() time.Time {
	d := s.general().ClientLoginTimeout
	if d <= 0 {
		return time.Time{}
	}
	return s.ConnectedAt.Add(d)
}

// loginContext bounds ctx by the login deadline.
func (s *Session) loginContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl := s.loginDeadline(); !dl.IsZero() {
		return context.WithDeadline(ctx, dl)
	}
	return context.WithCancel(ctx)
}

// errLoginCounted marks a login error already counted and answered in its
// own way (a TLS handshake that failed or timed out).
var errLoginCounted = errors.New("login failure counted")

// loginEnded counts a login that ran out of client_login_timeout while
// the client was being read or written (a client that stalls in its
// startup packet, TLS handshake or password exchange) and, once its
// startup packet was read (started), tells it. Failures answered in their
// own way (a ClientError, a TLS failure) are left as they are.
func (s *Session) loginEnded(err error, started bool) error {
	var ce *ClientError
	dl := s.loginDeadline()
	if err == nil || dl.IsZero() || time.Now().Before(dl) || !errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ce) || errors.Is(err, errLoginCounted) {
		return err
	}
	s.loginFailed("timeout")
	if started {
		_ = s.nc.SetWriteDeadline(time.Now().Add(time.Second))
		s.fatal("08P01", fmt.Sprintf("client_login_timeout: the login did not finish within %s", s.general().ClientLoginTimeout))
	}
	return fmt.Errorf("client_login_timeout: %w", err)
}

// fatal sends a FATAL ErrorResponse; the caller then ends the session,
// which closes gracefully so that the client reads it.
func (s *Session) fatal(code, msg string) {
	s.lastWord.Store(true)
	_ = s.Write(protocol.AppendError(nil, "FATAL", code, msg))
}

// Bounds of the graceful close after a last word: how long and how much
// of what the client still sends is read and dropped.
const (
	drainTimeout = time.Second
	drainLimit   = 8 << 20
)

// close ends the connection. After a FATAL error it closes gracefully
// (see closeGracefully); otherwise tcp_so_linger decides, which is only
// set once the client has logged in (applyLinger), except for TLS.
func (s *Session) close() {
	if s.lastWord.Load() {
		s.closeTLSWrite()
		closeGracefully(s.raw)
		return
	}
	if tc, ok := tcpClient(s.raw); ok && s.tls != nil {
		// A TLS client answers our close_notify (or sends its own after
		// Terminate, as pgx and libpq do): with tcp_so_linger 0 the reset
		// makes that write fail and pgx's Close report an error. A TLS
		// session ends with close_notify and a FIN.
		_ = rawio.SetLinger(tc, -1)
	}
	_ = s.nc.Close()
}

// closeGracefully closes a connection whose last message the client must
// read: a close with linger 0, or with unread bytes in the receive buffer
// (the rest of a 70 KB password the session refused to read), makes the
// kernel send a reset, and the client may lose the error. So: linger off,
// FIN, then drop what the client still sends, within drainTimeout and
// drainLimit, before the close.
func closeGracefully(nc net.Conn) {
	if tc, ok := tcpClient(nc); ok {
		_ = rawio.SetLinger(tc, -1)
		_ = tc.CloseWrite()
		_ = tc.SetReadDeadline(time.Now().Add(drainTimeout))
		_, _ = io.CopyN(io.Discard, tc, drainLimit)
	}
	_ = nc.Close()
}

// tcpSocket is a client's TCP socket: a *net.TCPConn, or a socket of
// internal/fdconn (the daemon's accept path).
type tcpSocket interface {
	net.Conn
	CloseWrite() error
}

// tcpClient returns nc as a TCP socket; false for a unix socket, a TLS
// connection or a parked one.
func tcpClient(nc net.Conn) (tcpSocket, bool) {
	switch c := nc.(type) {
	case *net.TCPConn:
		return c, true
	case *fdconn.Conn:
		return c, true
	}
	return nil, false
}

// promote moves a client socket of internal/fdconn into Go's netpoller,
// for a session that goes on in its own goroutine (fdconn's package
// comment): its waits then skip the Poller's hop. Any other socket stays
// as it is. Under mu, so that Kill's close comes before or after it.
func (s *Session) promote() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fc, ok := s.raw.(*fdconn.Conn)
	if !ok {
		return nil
	}
	if err := fc.Promote(); err != nil {
		return fmt.Errorf("client socket: %w", err)
	}
	return nil
}

// clientAddr is the client's IP for hba; unix sockets have none.
func (s *Session) clientAddr() netip.Addr {
	if ta, ok := s.RemoteAddr.(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

func (s *Session) general() *config.General { return &s.env.Pools.Config().General }

// Server returns the attached server connection, nil between transactions.
// Its fields must only be read (SHOW SERVERS).
func (s *Session) Server() *pooler.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// Pool returns the pool the client logged into (nil for admin sessions).
func (s *Session) Pool() *pooler.Pool { return s.pool }

// RequestTimes is what SHOW CLIENTS shows of the client's latest request
// at now: when it came (the start of its latest transaction, query or
// wait for a server; ConnectedAt before any) and, while it waits for a
// server, how long it has waited (0 otherwise). Safe from any goroutine.
func (s *Session) RequestTimes(now time.Time) (at time.Time, wait time.Duration) {
	s.mu.Lock()
	xact, query, waiting := s.xactStart, s.queryStart, s.waiting
	s.mu.Unlock()
	at = s.ConnectedAt.Add(max(xact, query))
	if waiting {
		wait = max(now.Sub(s.ConnectedAt.Add(xact)), 0)
	}
	return at, wait
}

// PreparedStatements is the number of statements the client has prepared
// and not closed, as its rewriter holds them (0 when prepared statements
// are not rewritten, or when a parked client's rewriter was empty and
// dropped). Safe from any goroutine: SHOW CLIENTS reads it.
func (s *Session) PreparedStatements() int {
	s.mu.Lock()
	rw := s.rw
	s.mu.Unlock()
	if rw == nil {
		return 0
	}
	return rw.names.Count()
}

func (s *Session) countConnection(kind string) {
	if s.env.Metrics != nil {
		s.env.Metrics.ClientConnection(kind)
	}
}
