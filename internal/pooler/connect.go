package pooler

// How a pool reaches its server: the connect with its retries, the
// backend options and credentials, and the Patroni-assisted fallback.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/leaderlock"
	"github.com/doorman-go/doorman/internal/prepared"
	"github.com/doorman-go/doorman/internal/servertls"
)

// connect opens a server connection for the pool (its pool.Options.Connect),
// waiting and trying again per server_login_retry while the server is away.
// With server_login_retry_patroni it waits only while the local Patroni
// holds the leader lock, and a server that comes back in recovery while it
// does (a leader restarting in place, not yet promoted) is not back yet.
func (p *Pool) connect(ctx context.Context) (*backend.Conn, error) {
	s := p.Settings()
	o, err := p.options(s)
	if err != nil {
		return nil, err
	}
	retry, gate := s.General.ServerLoginRetry, p.reg.leaderGate()
	c, fellBack, err := p.dial(ctx, s, o)
	for {
		if err == nil {
			if fellBack || !p.leaderInRecovery(ctx, gate, c) || !p.mayRetry(ctx, retry, gate, nil) {
				break
			}
			p.Stats.ConnectInRecovery.Add(1)
			_ = c.Close()
			err = errLeaderInRecovery
		} else {
			p.Stats.ConnectErrors.Add(1)
			p.logTLSFailure(err)
			p.ExpireServerParams() // the server is away: its role may change
			if !p.mayRetry(ctx, retry, gate, err) {
				return nil, err
			}
		}
		if !sleep(ctx, retry) {
			return nil, err
		}
		p.Stats.ConnectRetries.Add(1)
		c, fellBack, err = p.dial(ctx, s, o)
	}
	c.Prepared = prepared.NewServerSet(s.General.PreparedStatementsCacheSize)
	if !fellBack {
		p.sawPrimary.Store(c.Params["in_hot_standby"] == "off")
	}
	p.mu.Lock()
	p.serverParams, p.serverParamsAt = copyParams(c.Params), time.Now()
	p.mu.Unlock()
	return c, nil
}

// errLeaderInRecovery is what a client is told when its wait ends while
// the leader's server is still in recovery.
var errLeaderInRecovery = errors.New("server is in recovery while the local Patroni holds the leader lock (restarting in place)")

// leaderInRecovery reports whether c, a connection to the local server
// (a Patroni fallback member is used as it is), came up in recovery on a
// node whose Patroni holds the leader lock, where the pool's local server
// was a primary before: Patroni restarts a crashed leader in recovery and promotes it a
// loop later, and a write sent in between would fail with 25006. Only with
// a gate, and only when the server reports in_hot_standby (PostgreSQL 14+).
func (p *Pool) leaderInRecovery(ctx context.Context, gate *leaderlock.Gate, c *backend.Conn) bool {
	return gate != nil && c.Params["in_hot_standby"] == "on" && p.sawPrimary.Load() && gate.Held(ctx)
}

// mayRetry reports whether a failed connect (err; nil for a server in
// recovery) is worth another after retry (server_login_retry): only when
// the setting is on, the failure is one a server coming back cures (see
// retryableConnect), the caller's deadline (query_wait_timeout) leaves
// room for the wait, and, with a gate, the local Patroni holds the leader
// lock; otherwise the caller gets this failure at once.
func (p *Pool) mayRetry(ctx context.Context, retry time.Duration, gate *leaderlock.Gate, err error) bool {
	if retry <= 0 || ctx.Err() != nil || (err != nil && !retryableConnect(err)) {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < retry {
		return false
	}
	if gate != nil && !gate.Held(ctx) {
		p.Stats.RetryNotLeader.Add(1)
		return false
	}
	return true
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
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

// dial opens a server connection, through Patroni-assisted fallback when
// the pool has patroni_api_urls: the local server first, another member of
// the cluster while the local one is down (fellBack).
func (p *Pool) dial(ctx context.Context, s *Settings, o backend.Options) (c *backend.Conn, fellBack bool, err error) {
	fb := p.fallbackDialer(s)
	if fb == nil {
		c, err = backend.Connect(ctx, o)
		return c, false, err
	}
	conn, res, err := fb.Connect(ctx, fallback.Target{Network: o.Network, Address: o.Address},
		func(ctx context.Context, t fallback.Target) (fallback.Conn, error) {
			oo := o
			oo.Network, oo.Address = t.Network, t.Address
			return backend.Connect(ctx, oo)
		})
	if err != nil {
		return nil, false, err
	}
	c = conn.(*backend.Conn)
	if res.Fallback {
		c.Lifetime = res.Lifetime
	}
	if res.LocalRestored {
		// The local server is back: retire the fallback connections.
		go p.conns.Reconnect()
	}
	return c, res.Fallback, nil
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
