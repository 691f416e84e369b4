package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	"github.com/doorman-go/doorman/internal/memreturn"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/session"
	"github.com/doorman-go/doorman/internal/sockopt"
	"github.com/doorman-go/doorman/internal/upgrade"
)

// Version is set by the linker.
var Version = "0.1.0-dev"

// Daemon is one running pg_doorman.
type Daemon struct {
	Log   *zap.Logger
	Level zap.AtomicLevel

	Pools   *pooler.Registry
	Clients *session.Registry
	// Memory is the max_memory_usage budget; Reload changes its limit.
	Memory *memlimit.Budget

	cfgPath string
	hba     atomic.Pointer[hba.Rules]
	tls     *clienttls.Server // client-side TLS; its material is swapped on reload
	env     *session.Env
	admin   Admin   // nil: the admin databases are refused (tests)
	metrics Metrics // nil: no metrics

	mu        sync.Mutex
	listeners []net.Listener
	conns     atomic.Int64 // open client sockets
	wg        sync.WaitGroup
	shutdown  chan struct{}
	drained   chan struct{} // closed when drain has finished
	once      sync.Once
	StartedAt time.Time

	// fdListeners accept from dups of TCP listeners (acceptFD): closed
	// with the listeners, and refused once they are (listenersClosed).
	// Both under mu.
	fdListeners     []*fdconn.Listener
	listenersClosed bool
	fdPoller        atomic.Pointer[fdconn.Poller] // Serve's, while it runs
	// listenerOpts: the client options set on the TCP listener before it
	// listened, which the sockets it accepts inherit (listenControl,
	// configureFD); nil if none were (an inherited listener).
	listenerOpts atomic.Pointer[clientOpts]

	reloads        atomic.Uint64
	reloadFailure  atomic.Bool
	reloadFailures atomic.Uint64

	// Binary upgrade.
	upgradeReq   chan struct{}
	upgrading    atomic.Bool
	inherited    *upgrade.Inherited // set by Inherit in the new process
	UpgradeStats UpgradeStats
}

// Admin serves authenticated admin console sessions (package admin).
type Admin interface {
	Serve(ctx context.Context, s *session.Session) error
}

// Metrics hears of what sessions and the daemon do (package metrics).
type Metrics interface {
	session.Metrics
	// Rejected counts refused client connections by reason.
	Rejected(reason string)
	// AcceptFailed counts a failed accept of a client connection by
	// reason: "fd_limit" (EMFILE, ENFILE) or "other".
	AcceptFailed(reason string)
	// MemoryReturned counts a return of free heap to the OS (memreturn).
	MemoryReturned(bytes uint64)
}

// Parts build the admin console and the metrics exporter for a daemon: both
// read its state, so New calls them with the daemon once its own parts
// exist (instead of hooks filled in afterwards), Metrics before Admin, so
// that the console can be given the exporter. Either may be nil.
type Parts struct {
	Admin   func(*Daemon) Admin
	Metrics func(*Daemon) Metrics
}

// maxPAMTransactions bounds the PAM calls running at once: each holds an
// OS thread for as long as the PAM stack takes (LDAP, Kerberos).
const maxPAMTransactions = 16

// New builds a daemon for a loaded configuration.
func New(cfg *config.Config, log *zap.Logger, level zap.AtomicLevel, parts Parts) (*Daemon, error) {
	d := &Daemon{
		Log: log, Level: level, cfgPath: cfg.Path,
		Pools:      pooler.NewRegistry(cfg, log),
		Clients:    session.NewRegistry(),
		Memory:     memlimit.New(int64(cfg.General.MaxMemoryUsage)),
		shutdown:   make(chan struct{}),
		drained:    make(chan struct{}),
		upgradeReq: make(chan struct{}, 1),
	}
	if err := d.setHBA(cfg); err != nil {
		return nil, err
	}
	g := &cfg.General
	tlsSrv, err := clienttls.NewServer(g.TLSMode, g.ClientTLSFiles(), g.TLSRateLimitPerSecond)
	if err != nil {
		return nil, fmt.Errorf("client TLS: %w", err)
	}
	d.tls = tlsSrv
	if parts.Metrics != nil {
		d.metrics = parts.Metrics(d)
	}
	if parts.Admin != nil {
		d.admin = parts.Admin(d)
	}
	return d, nil
}

// Metrics returns the metrics exporter New was given, or nil.
func (d *Daemon) Metrics() Metrics { return d.metrics }

func (d *Daemon) setHBA(cfg *config.Config) error {
	if !cfg.General.PgHba.Set() {
		d.hba.Store(nil)
		return nil
	}
	rules, err := hba.Parse(cfg.General.PgHba.Content)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.General.PgHba.Key, err)
	}
	d.hba.Store(rules)
	return nil
}

// Config returns the configuration in force.
func (d *Daemon) Config() *config.Config { return d.Pools.Config() }

// Listen opens the TCP listener and, if configured, the unix socket (or
// takes the old process's in a binary upgrade), with general.backlog.
func (d *Daemon) Listen() error {
	if err := d.listen(); err != nil {
		return err
	}
	return d.setBacklog(listenBacklog(&d.Config().General))
}

// listenBacklog is the listen backlog general.backlog asks for: its value,
// or max_connections when it is 0. The kernel caps it at its own limit
// (net.core.somaxconn).
func listenBacklog(g *config.General) int {
	if g.Backlog > 0 {
		return g.Backlog
	}
	return g.MaxConnections
}

// setBacklog gives every listener the backlog n (listen(2) again: a reload
// changes it without closing anything).
func (d *Daemon) setBacklog(n int) error {
	for _, ln := range d.listeners {
		if err := sockopt.SetBacklog(ln, n); err != nil {
			return fmt.Errorf("%s: %w", ln.Addr(), err)
		}
	}
	return nil
}

func (d *Daemon) listen() error {
	if in := d.inherited; in != nil {
		return d.listenInherited(in)
	}
	g := d.Config().General
	addr := net.JoinHostPort(g.Host, fmt.Sprint(g.Port))
	// KeepAlive -1: Go would set its own keepalive (15 s) on every
	// accepted socket, four system calls that configureClientSocket then
	// repeats with the configured values.
	// Control: the client options go on the listener (listenControl).
	lc := net.ListenConfig{KeepAlive: -1, Control: d.listenControl(&g)}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	d.listeners = append(d.listeners, ln)
	if g.UnixSocketDir != "" {
		path := config.UnixSocketPath(g.UnixSocketDir, g.Port)
		_ = os.Remove(path)
		uln, err := net.Listen("unix", path)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("listen on %s: %w", path, err)
		}
		_ = os.Chmod(path, 0o777)
		d.listeners = append(d.listeners, uln)
	}
	return nil
}

// Addr is the TCP listen address (tests use port 0).
func (d *Daemon) Addr() net.Addr { return d.listeners[0].Addr() }

// Serve accepts clients until Shutdown. It returns when every session has
// ended.
func (d *Daemon) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.StartedAt = time.Now()
	// Idle clients wait in the Parker without a goroutine. Without one
	// (not Linux, or no epoll) each keeps its goroutine.
	parker, err := idlepark.New(d.Log)
	if err != nil {
		d.Log.Warn("idle clients keep a goroutine each: no epoll set for them", zap.Error(err))
	}
	d.env = &session.Env{
		Pools: d.Pools, Clients: d.Clients, Log: d.Log,
		HBA:     func() *hba.Rules { return d.hba.Load() },
		Admin:   d.adminServe(),
		Metrics: d.sessionMetrics(),
		Memory:  d.Memory,
		TLS:     d.tls,
		Parker:  parker,
		// A parked client's socket is made a net.Conn again on resume.
		ConfigureSocket: d.configureClientSocket,
	}
	if d.Config().General.TransactionLoop {
		// The transaction core: plaintext transaction-mode clients run on
		// one event loop.
		cm, _ := d.metrics.(session.CoreMetrics) // nil: the core's events are not counted
		core, err := session.NewCore(d.Log, cm)
		if err != nil {
			return fmt.Errorf("general.transaction_loop: %w", err)
		}
		d.env.Core = core
	}
	if pam.Available() {
		d.env.PAM = pam.New(maxPAMTransactions)
	}
	if in := d.inherited; in != nil && in.Channel != nil {
		go d.receive(ctx, in.Channel)
	}
	go d.Pools.Run(ctx)
	// Free heap a burst left behind goes back to the OS once it is quiet.
	returner := make(chan struct{})
	go func() {
		defer close(returner)
		memreturn.Run(ctx, memreturn.Options{Observer: d.memoryObserver(), Log: d.Log})
	}()
	// TCP clients are accepted into an fdconn.Poller: their logins make
	// no system call the Go scheduler sees (internal/fdconn). Without one
	// (not Linux) package net accepts them.
	fdPoller, err := fdconn.NewPoller()
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		d.Log.Warn("clients accepted by package net", zap.Error(err))
	}
	if fdPoller != nil {
		d.fdPoller.Store(fdPoller)
	}
	var accept sync.WaitGroup
	for _, ln := range d.listeners {
		accept.Add(1)
		go func(ln net.Listener) {
			defer accept.Done()
			if fdPoller != nil && d.acceptFD(ctx, fdPoller, ln) {
				return
			}
			d.acceptLoop(ctx, ln.Accept)
		}(ln)
	}
	accept.Wait()
	d.wg.Wait()
	if fdPoller != nil {
		d.fdPoller.Store(nil)
		_ = fdPoller.Close() // every session has ended: no client socket is in it
	}
	if parker != nil {
		_ = parker.Close() // every session has ended: nothing is parked
	}
	if d.env.Core != nil {
		d.env.Core.Close() // every session has ended: the loop holds none
	}
	if d.ShuttingDown() {
		<-d.drained // its last log lines and pool closing come before we return
	}
	d.Pools.Close()
	cancel()
	<-returner
	return nil
}

// acceptLoop admits what accept returns until the listener is closed, or
// until shutdown or ctx ends while it backs off after a failed accept.
func (d *Daemon) acceptLoop(ctx context.Context, accept func() (net.Conn, error)) {
	var delay time.Duration
	for {
		nc, err := accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, fdconn.ErrClosed) {
				return
			}
			// EMFILE and friends: back off instead of spinning.
			delay = acceptBackoff(delay)
			if d.metrics != nil {
				d.metrics.AcceptFailed(acceptFailure(err))
			}
			d.Log.Warn("accept failed", zap.Error(err), zap.Duration("retry_in", delay))
			if !d.backOff(ctx, delay) {
				return
			}
			continue
		}
		delay = 0
		d.admit(ctx, nc)
	}
}

// acceptBackoff is the wait after a failed accept that followed a wait of
// delay (0 after a success): 5 ms, doubling up to a second.
func acceptBackoff(delay time.Duration) time.Duration {
	return min(max(2*delay, 5*time.Millisecond), time.Second)
}

// backOff waits delay and reports true, or false as soon as a shutdown or
// an upgrade starts (both close the listeners) or ctx ends: neither
// waits for the back-off.
func (d *Daemon) backOff(ctx context.Context, delay time.Duration) bool {
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.shutdown:
		return false
	case <-ctx.Done():
		return false
	}
}

// acceptFailure is the reason label of a failed accept.
func acceptFailure(err error) string {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return "fd_limit"
	}
	return "other"
}

// admit starts the session of an accepted client, or refuses it over
// max_connections.
func (d *Daemon) admit(ctx context.Context, nc net.Conn) {
	d.configureClientSocket(nc)
	if n := d.conns.Add(1); n > int64(d.Config().General.MaxConnections) {
		d.conns.Add(-1)
		d.reject(nc, "max_connections", "53300", "sorry, too many clients already")
		return
	}
	d.wg.Add(1)
	go d.serveClient(ctx, nc)
}

func (d *Daemon) serveClient(ctx context.Context, nc net.Conn) {
	session.Serve(ctx, d.env, nc, d.clientEnded)
}

// clientEnded runs once per client when its session is over, in whatever
// goroutine ran it last (a parked client resumes in a new one).
func (d *Daemon) clientEnded() {
	d.conns.Add(-1)
	d.wg.Done()
}

func (d *Daemon) reject(nc net.Conn, reason, code, msg string) {
	if d.metrics != nil {
		d.metrics.Rejected(reason)
	}
	go session.RejectStartup(nc, code, msg)
}

func (d *Daemon) configureClientSocket(nc net.Conn) {
	if fc, ok := nc.(*fdconn.Conn); ok {
		d.configureFD(fc)
		return
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	g := d.Config().General
	if !g.TCPNoDelay {
		_ = tc.SetNoDelay(false) // Go sets TCP_NODELAY on every new TCPConn
	}
	if n := int(g.TCPSocketBufferSize); n > 0 {
		// Caps the kernel buffers an idle client holds (the kernel
		// doubles the value for bookkeeping).
		_ = tc.SetReadBuffer(n)
		_ = tc.SetWriteBuffer(n)
	}
	// tcp_so_linger is applied by the session once the client has logged
	// in: until then every close ends with something the client must read
	// (an 'N', a FATAL error, the end of a cancel request), and linger 0
	// would turn it into a reset that drivers report as ECONNRESET.
	// Keepalive as on server connections (backend.Options.KeepAlive): on,
	// tcp_keepalives_idle 0 meaning Go's default idle time.
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: g.TCPKeepalivesIdle, Interval: g.TCPKeepalivesInterval, Count: g.TCPKeepalivesCount})
	_ = sockopt.SetUserTimeout(tc, g.TCPUserTimeout) // config refuses it where there is no such option
}

// clientOpts are the options of a client socket that pg_doorman sets on
// its TCP listener for the sockets it accepts to inherit: tcp_no_delay,
// keepalive on, tcp_keepalives_idle, _interval and _count.
type clientOpts struct {
	noDelay             bool
	keepIdle, keepIntvl time.Duration
	keepCnt             int
}

// clientOptsOf is g's clientOpts.
func clientOptsOf(g *config.General) clientOpts {
	return clientOpts{noDelay: g.TCPNoDelay, keepIdle: g.TCPKeepalivesIdle, keepIntvl: g.TCPKeepalivesInterval,
		keepCnt: g.TCPKeepalivesCount}
}

// LoginSockets is how many client sockets internal/fdconn holds: clients
// accepted over TCP that log in, or wait to be handed on (to the
// transaction core, or into Go's netpoller for a session of its own).
func (d *Daemon) LoginSockets() int {
	if p := d.fdPoller.Load(); p != nil {
		return p.Len()
	}
	return 0
}

// ConnCount is the number of open client sockets.
func (d *Daemon) ConnCount() int64 { return d.conns.Load() }

func (d *Daemon) adminServe() func(context.Context, *session.Session) error {
	if d.admin == nil {
		return nil
	}
	return d.admin.Serve
}

// memoryObserver is d.metrics as memreturn sees it; nil stays an untyped
// nil.
func (d *Daemon) memoryObserver() memreturn.Observer {
	if d.metrics == nil {
		return nil
	}
	return d.metrics
}

// sessionMetrics is d.metrics as sessions see it; nil stays an untyped nil
// so that the sessions' nil checks hold.
func (d *Daemon) sessionMetrics() session.Metrics {
	if d.metrics == nil {
		return nil
	}
	return d.metrics
}
