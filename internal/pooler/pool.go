package pooler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/prepared"
	"github.com/doorman-go/doorman/internal/servertls"
)

// Settings is the immutable slice of configuration one pool runs with.
type Settings struct {
	General *config.General
	DB      *config.Pool
	User    *config.User
}

// Mode returns the pool mode in force for this user.
func (s *Settings) Mode() string { return s.User.PoolMode }

// Conn is a checked-out server connection.
type Conn = pool.Conn[*backend.Conn]

// Pool is the server connection pool of one (database, user) pair.
type Pool struct {
	Database string
	User     string
	Stats    Stats

	// Statements is the pool-level prepared statement cache.
	Statements *prepared.Cache
	// XactTimes and QueryTimes feed the percentiles of SHOW POOLS_EXTENDED
	// style metrics and the adaptive deadlines of the acquire path.
	XactTimes, QueryTimes Histogram
	xactP99, xactP95      cachedQuantile

	coord atomic.Pointer[coordinator.User] // nil without max_db_connections

	settings atomic.Pointer[Settings]
	conns    *pool.Pool[*backend.Conn]

	reg *Registry

	dynamic  bool         // created by auth_query; collected when unused
	lastUsed atomic.Int64 // unix ns of the last AuthQueryPool handing it out

	mu             sync.Mutex
	serverParams   map[string]string // from the most recent new connection
	serverParamsAt time.Time
	paramsRefresh  chan struct{}    // closed when the refresh in flight ends; nil when none
	clientKey      []byte           // SCRAM ClientKey recovered from a client
	fb             *fallback.Dialer // Patroni-assisted fallback, nil without patroni_api_urls
	fbFor          *Settings        // the settings fb was built for
}

func newPool(s *Settings, reg *Registry) *Pool {
	p := &Pool{Database: s.DB.Name, User: s.User.Username, reg: reg,
		Statements: prepared.NewCache(s.General.PreparedStatementsCacheSize, "DOORMAN_")}
	p.settings.Store(s)
	p.xactP99 = cachedQuantile{h: &p.XactTimes, q: 0.99}
	p.xactP95 = cachedQuantile{h: &p.XactTimes, q: 0.95}
	p.conns = pool.New(pool.Options[*backend.Conn]{
		Config:       poolConfig(s),
		Connect:      p.connect,
		Check:        check,
		XactP99:      p.xactP99.get,
		Permit:       p.permit,
		TryPermit:    p.tryPermit,
		OnIdleReturn: p.idleReturned,
		Alive:        (*backend.Conn).Alive,
	})
	return p
}

func poolConfig(s *Settings) pool.Config {
	return pool.Config{
		MaxSize:            s.User.PoolSize,
		MinSize:            s.User.MinPoolSize,
		MaxParallelCreates: s.General.ScalingMaxParallelCreates,
		RoundRobin:         s.General.ServerRoundRobin,
		IdleTimeout:        s.DB.IdleTimeout,
		Lifetime:           s.User.ServerLifetime,
		IdleCheckTimeout:   s.General.ServerIdleCheckTimeout,
		WarmRatio:          s.DB.ScalingWarmPoolRatio,
		FastRetries:        s.DB.ScalingFastRetries,
	}
}

func (p *Pool) apply(s *Settings) {
	p.XactTimes.Reset()
	p.QueryTimes.Reset()
	p.settings.Store(s)
	p.conns.SetConfig(poolConfig(s))
	p.Statements.SetSize(s.General.PreparedStatementsCacheSize)
}

// Settings returns the configuration the pool runs with now.
func (p *Pool) Settings() *Settings { return p.settings.Load() }

// Conns exposes the underlying connection pool (admin, tests).
func (p *Pool) Conns() *pool.Pool[*backend.Conn] { return p.conns }

// Acquire waits for a server connection at most query_wait_timeout
// (0 = no limit) and counts the wait.
func (p *Pool) Acquire(ctx context.Context) (*Conn, error) {
	if c := p.conns.TryAcquire(ctx); c != nil {
		p.Stats.WaitCount.Add(1)
		return c, nil
	}
	s := p.Settings()
	if s.General.QueryWaitTimeout == 0 {
		// No waiting at all: an idle connection or a connect now.
		c, err := p.conns.TryCreate(ctx)
		if errors.Is(err, pool.ErrNoWait) {
			p.Stats.WaitTimeouts.Add(1)
			return nil, ErrWaitTimeout
		}
		return c, err
	}
	if d := s.General.QueryWaitTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	start := time.Now()
	p.Stats.ClientsWaiting.Add(1)
	c, err := p.conns.Acquire(ctx)
	p.Stats.ClientsWaiting.Add(-1)
	wait := time.Since(start)
	p.Stats.WaitTime.Add(uint64(wait.Microseconds()))
	p.Stats.WaitCount.Add(1)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			p.Stats.WaitTimeouts.Add(1)
			return nil, ErrWaitTimeout
		}
		return nil, err
	}
	return c, nil
}

// ErrWaitTimeout means no server connection became free within
// query_wait_timeout.
var ErrWaitTimeout = errors.New("query_wait_timeout")

// Release returns a clean connection; Destroy drops a broken one.
func (p *Pool) Release(c *Conn) {
	if c.Value.Broken {
		p.Destroy(c)
		return
	}
	p.conns.Release(c)
}

// Destroy closes a connection that must not be reused. It is also a sign
// that the server may have changed (a shutdown for a demotion ends every
// session), so the next login reads the ParameterStatus set from a server
// again instead of trusting the cached one for the rest of its TTL.
func (p *Pool) Destroy(c *Conn) {
	p.conns.Destroy(c)
	p.ExpireServerParams()
}

// SetClientKey stores the SCRAM ClientKey recovered from a client's proof,
// which passthrough needs to open server connections.
func (p *Pool) SetClientKey(key []byte) {
	p.mu.Lock()
	p.clientKey = append([]byte(nil), key...)
	p.mu.Unlock()
}

// ClientKey returns the SCRAM ClientKey the pool logs in with (nil if
// none): a binary upgrade hands it to the new process.
func (p *Pool) ClientKey() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.clientKey...)
}

// Dynamic reports whether auth_query created the pool.
func (p *Pool) Dynamic() bool { return p.dynamic }

// serverParamsTTL bounds how stale the ParameterStatus set given to new
// clients may be: in_hot_standby and default_transaction_read_only change on
// promotion or failover, and libpq's target_session_attrs trusts them.
const serverParamsTTL = time.Second

// ServerParams returns a copy of the ParameterStatus set of the server. A
// failed server connect or a destroyed connection expires the set at once;
// a set older than serverParamsTTL is refreshed from a real connection
// (whose liveness check also drops connections the server has since
// changed under us) after an empty statement on it: PostgreSQL reports a
// changed in_hot_standby (promotion in place) to an existing connection
// only when that connection next runs a statement.
//
// One refresh runs at a time: logins that find the set stale while a
// refresh is in flight wait for it (a login storm must not check out a
// server connection per login), and then take what it left, stale or not.
// A refresh that fails hands out the stale set without in_hot_standby and
// default_transaction_read_only, so that libpq asks the server.
func (p *Pool) ServerParams(ctx context.Context) (map[string]string, error) {
	for {
		p.mu.Lock()
		sp, at, inflight := p.serverParams, p.serverParamsAt, p.paramsRefresh
		if sp != nil && time.Since(at) < serverParamsTTL {
			p.mu.Unlock()
			return copyParams(sp), nil
		}
		if inflight == nil {
			done := make(chan struct{})
			p.paramsRefresh = done
			p.mu.Unlock()
			return p.refreshServerParams(ctx, sp, done)
		}
		p.mu.Unlock()
		select {
		case <-inflight:
		case <-ctx.Done():
			if sp != nil {
				return withoutRoleParams(sp), nil
			}
			return nil, fmt.Errorf("wait for server parameters: %w", ctx.Err())
		}
		p.mu.Lock()
		sp, at = p.serverParams, p.serverParamsAt
		p.mu.Unlock()
		switch {
		case sp != nil && time.Since(at) < serverParamsTTL:
			return copyParams(sp), nil
		case sp != nil: // the refresh failed: the role is unknown
			return withoutRoleParams(sp), nil
		}
		// The refresh failed and there is no set at all: try ourselves.
	}
}

// ExpireServerParams makes the next ServerParams call read the set from a
// server again (RECONNECT: the server behind the pool may have changed).
func (p *Pool) ExpireServerParams() {
	p.mu.Lock()
	p.serverParamsAt = time.Time{}
	p.mu.Unlock()
}

// refreshServerParams reads the set from a real connection; on failure it
// returns stale (if any) instead of the error. It ends the refresh in
// flight: done is closed after the new set (if any) is in place.
func (p *Pool) refreshServerParams(ctx context.Context, stale map[string]string, done chan struct{}) (map[string]string, error) {
	defer func() {
		p.mu.Lock()
		p.paramsRefresh = nil
		p.mu.Unlock()
		close(done)
	}()
	c, err := p.Acquire(ctx)
	if err == nil {
		if err = check(ctx, c.Value); err != nil {
			p.Destroy(c)
		}
	}
	if err != nil {
		if stale != nil {
			return withoutRoleParams(stale), nil
		}
		return nil, err
	}
	params := copyParams(c.Value.Params)
	p.Release(c)
	p.mu.Lock()
	p.serverParams, p.serverParamsAt = copyParams(params), time.Now()
	p.mu.Unlock()
	return params, nil
}

// roleParams say what kind of server a client is on; libpq 14+ decides
// target_session_attrs from them alone when both are reported.
var roleParams = [...]string{"in_hot_standby", "default_transaction_read_only"}

// withoutRoleParams is stale minus roleParams: after a failed refresh the
// server's role is unknown (it may be restarting as a standby), and a
// client that is not told asks the server itself (SHOW
// transaction_read_only) instead of trusting the old answer.
func withoutRoleParams(stale map[string]string) map[string]string {
	out := copyParams(stale)
	for _, k := range roleParams {
		delete(out, k)
	}
	return out
}

func copyParams(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (p *Pool) connect(ctx context.Context) (*backend.Conn, error) {
	s := p.Settings()
	o, err := p.options(s)
	if err != nil {
		return nil, err
	}
	c, err := p.dial(ctx, s, o)
	for err != nil {
		p.Stats.ConnectErrors.Add(1)
		p.logTLSFailure(err)
		p.ExpireServerParams() // the server is away: its role may change
		if !p.waitToRetry(ctx, s.General.ServerLoginRetry, err) {
			return nil, err
		}
		p.Stats.ConnectRetries.Add(1)
		c, err = p.dial(ctx, s, o)
	}
	c.Prepared = prepared.NewServerSet(s.General.PreparedStatementsCacheSize)
	p.mu.Lock()
	p.serverParams, p.serverParamsAt = copyParams(c.Params), time.Now()
	p.mu.Unlock()
	return c, nil
}

// waitToRetry waits retry (server_login_retry) after a failed connect
// and reports whether to try again: only when the setting is on, the
// failure is one a server coming back cures (see retryableConnect), and
// the caller's deadline (query_wait_timeout) leaves room for the wait;
// otherwise the caller gets this failure at once.
func (p *Pool) waitToRetry(ctx context.Context, retry time.Duration, err error) bool {
	if retry <= 0 || ctx.Err() != nil || !retryableConnect(err) {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < retry {
		return false
	}
	t := time.NewTimer(retry)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryableConnect: a server that refused or dropped the connection, or
// said it is starting up or shutting down (57P01-57P03), may be back in a
// moment, as when PostgreSQL restarts in place. A refused login (28xxx),
// a TLS failure or a missing SCRAM key stays as it is until someone
// changes a setting.
func retryableConnect(err error) bool {
	var se *backend.ServerError
	var te *backend.TLSError
	switch {
	case errors.As(err, &se):
		return se.Code == "57P01" || se.Code == "57P02" || se.Code == "57P03"
	case errors.As(err, &te), errors.Is(err, backend.ErrNoSCRAMKey):
		return false
	case errors.Is(err, context.Canceled):
		return false
	}
	return true
}

func (p *Pool) options(s *Settings) (backend.Options, error) {
	var obs backend.TLSObserver
	if p.reg != nil {
		obs = p.reg.ServerTLSObserver()
	}
	o, err := baseOptions(s, obs)
	if err != nil {
		return o, err
	}
	cred, err := p.credentials(s)
	if err != nil {
		return o, err
	}
	o.Credentials = cred
	return o, nil
}

// baseOptions is how a pool of s reaches its server, without credentials.
func baseOptions(s *Settings, obs backend.TLSObserver) (backend.Options, error) {
	network, address := backend.Address(s.DB.ServerHost, s.DB.ServerPort)
	o := backend.Options{
		Network:        network,
		Address:        address,
		Database:       s.DB.ServerDatabase,
		ConnectTimeout: s.DB.ConnectTimeout,
		KeepAlive:      s.General.TCPKeepalivesIdle,
		KeepAliveIntvl: s.General.TCPKeepalivesInterval,
		KeepAliveCount: s.General.TCPKeepalivesCount,
		TCPUserTimeout: s.General.TCPUserTimeout,
		NoDelay:        s.General.TCPNoDelay,

		UnixSocketBufferSize: int(s.General.UnixSocketBufferSize),
		TLSObserver:          obs,
	}
	if s.DB.ApplicationName != "" {
		o.Params = append(o.Params, [2]string{"application_name", s.DB.ApplicationName})
	}
	tlsm, err := serverTLS(s.General)
	if err != nil {
		return o, err
	}
	o.TLS = tlsm
	return o, nil
}

// logTLSFailure logs a failure to set up TLS with the server: the session
// tells its client only that the server could not be reached.
func (p *Pool) logTLSFailure(err error) {
	var te *backend.TLSError
	if p.reg == nil || p.reg.log == nil || !errors.As(err, &te) {
		return
	}
	p.reg.log.Warn("server TLS failed", zap.String("database", p.Database), zap.String("user", p.User),
		zap.String("server", te.Addr), zap.Stringer("server_tls_mode", te.Mode), zap.String("reason", te.Reason), zap.Error(te.Err))
}

// serverTLS is the server_tls_* material of the configuration the pool
// runs with: loaded by config.Load, so each reload brings the files read
// again. A General built in code and never validated has only its mode.
func serverTLS(g *config.General) (*servertls.Material, error) {
	if g.ServerTLS != nil {
		return g.ServerTLS, nil
	}
	if g.ServerTLSCACert != "" || g.ServerTLSCertificate != "" {
		return nil, errors.New("server_tls_* files set but not loaded: validate the configuration first")
	}
	m, err := servertls.ParseMode(g.ServerTLSMode)
	if err != nil {
		return nil, err
	}
	return servertls.FromMode(m), nil
}

func (p *Pool) credentials(s *Settings) (backend.Credentials, error) {
	u := s.User
	if u.ServerUsername != "" && u.ServerUsername != u.Username {
		return secretCredentials(u.ServerUsername, u.ServerPassword), nil
	}
	if u.ServerPassword != "" {
		return secretCredentials(u.Username, u.ServerPassword), nil
	}
	c := backend.Credentials{User: u.Username}
	switch {
	case auth.IsMD5Verifier(u.Password):
		c.MD5 = u.Password
	case auth.IsSCRAMVerifier(u.Password):
		v, err := auth.ParseSCRAMVerifier(u.Password)
		if err != nil {
			return c, fmt.Errorf("pool %s user %s: %w", s.DB.Name, u.Username, err)
		}
		p.mu.Lock()
		c.SCRAMClientKey = p.clientKey
		p.mu.Unlock()
		c.SCRAMServerKey = v.ServerKey
	}
	return c, nil
}

// secretCredentials logs in as user with a configured secret: an md5
// hash ("md5" and 32 hex digits, as in pg_authid) is passed as the hash,
// as PgBouncer does; anything else is the plaintext password.
func secretCredentials(user, secret string) backend.Credentials {
	if auth.IsMD5Verifier(secret) {
		return backend.Credentials{User: user, MD5: secret}
	}
	return backend.Credentials{User: user, Password: secret}
}

// check is the liveness probe for connections idle past
// server_idle_check_timeout: an empty query.
func check(ctx context.Context, c *backend.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.Exec(ctx, ";")
}

// permit asks the database's coordinator (max_db_connections) for a
// connection permit; without one there is nothing to ask.
func (p *Pool) permit(ctx context.Context) (pool.Permit, error) {
	u := p.coord.Load()
	if u == nil {
		return nil, nil
	}
	pm, err := u.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return pm, nil
}

// tryPermit is the coordinator's fast path (phase A): a free main slot or
// nothing. Without a coordinator no permit is needed.
func (p *Pool) tryPermit() (pool.Permit, bool) {
	u := p.coord.Load()
	if u == nil {
		return nil, true
	}
	pm, ok := u.TryAcquire()
	if !ok {
		return nil, false
	}
	return pm, true
}

func (p *Pool) idleReturned() {
	if u := p.coord.Load(); u != nil {
		u.NotifyIdleReturn()
	}
}

// member is how the coordinator sees a pool.
type member struct{ p *Pool }

func (m member) Load() coordinator.Load {
	l := m.p.conns.Load()
	return coordinator.Load{Idle: l.Idle, Total: l.Total, Queued: l.Queued, P95: m.p.xactP95.get()}
}

func (m member) EvictIdle(minAge time.Duration, floor int) bool {
	return m.p.conns.EvictIdle(minAge, floor)
}

// dial opens a server connection, through Patroni-assisted fallback when
// the pool has patroni_api_urls: the local server first, another member of
// the cluster while the local one is down.
func (p *Pool) dial(ctx context.Context, s *Settings, o backend.Options) (*backend.Conn, error) {
	fb := p.fallbackDialer(s)
	if fb == nil {
		return backend.Connect(ctx, o)
	}
	conn, res, err := fb.Connect(ctx, fallback.Target{Network: o.Network, Address: o.Address},
		func(ctx context.Context, t fallback.Target) (fallback.Conn, error) {
			oo := o
			oo.Network, oo.Address = t.Network, t.Address
			return backend.Connect(ctx, oo)
		})
	if err != nil {
		return nil, err
	}
	c := conn.(*backend.Conn)
	if res.Fallback {
		c.Lifetime = res.Lifetime
	}
	if res.LocalRestored {
		// The local server is back: retire the fallback connections.
		go p.conns.Reconnect()
	}
	return c, nil
}

// fallbackDialer returns the pool's fallback dialer, building it when the
// settings changed (reload); nil when the pool has no patroni_api_urls.
func (p *Pool) fallbackDialer(s *Settings) *fallback.Dialer {
	if len(s.DB.PatroniAPIURLs) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fb != nil && p.fbFor == s {
		return p.fb
	}
	if p.fb != nil {
		go p.fb.Close()
	}
	opts := fallback.Options{
		PoolName:       s.DB.Name,
		PatroniURLs:    s.DB.PatroniAPIURLs,
		Cooldown:       s.DB.FallbackCooldown,
		APITimeout:     s.DB.PatroniAPITimeout,
		ConnectTimeout: s.DB.FallbackConnectTimeout,
		Lifetime:       s.DB.FallbackLifetime,
		OuterTimeout:   s.General.QueryWaitTimeout,
		Log:            p.reg.log,
	}
	if m := p.reg.FallbackMetrics(); m != nil {
		opts.Metrics = m
	}
	fb, err := fallback.New(opts)
	if err != nil {
		if p.reg.log != nil {
			p.reg.log.Error("patroni fallback disabled for pool", zap.String("database", s.DB.Name), zap.Error(err))
		}
		p.fb, p.fbFor = nil, s
		return nil
	}
	p.fb, p.fbFor = fb, s
	return fb
}

// close closes the connections and the fallback dialer.
func (p *Pool) close() {
	p.conns.Close()
	p.mu.Lock()
	fb := p.fb
	p.fb = nil
	p.mu.Unlock()
	if fb != nil {
		fb.Close()
	}
}
