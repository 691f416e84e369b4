package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
)

// Defaults for Options, as in the configuration reference.
const (
	DefaultCooldown       = 30 * time.Second
	DefaultAPITimeout     = 5 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	// MinLifetime is the shortest lifetime a fallback connection gets when
	// it is opened near the end of the cooldown.
	MinLifetime = time.Second
)

// Target is where a server connection goes: Network "unix" or "tcp",
// Address a socket path or host:port (backend.Address builds the local one).
type Target struct {
	Network string
	Address string
}

func (t Target) String() string { return t.Network + ":" + t.Address }

// Conn is a server connection as the Dialer sees it: something to close
// when a race produced more than one.
type Conn interface {
	Close() error
}

// ConnectFunc opens and authenticates one server connection to t (the full
// startup). It must honour ctx: the Dialer bounds candidates by ctx alone.
type ConnectFunc func(ctx context.Context, t Target) (Conn, error)

// Fetcher reads the cluster; *patroni.Client implements it.
type Fetcher interface {
	FetchCluster(ctx context.Context) (*patroni.Cluster, string, error)
}

// Clock tells the time for cooldowns and the WARN rate limit;
// patronitest.ManualClock implements it.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options configures a Dialer. PatroniURLs (or Fetcher) is required; zero
// durations take the defaults.
type Options struct {
	PoolName       string
	PatroniURLs    []string           // patroni_api_urls
	TLS            *patroni.TLSConfig // for https Patroni URLs; nil = system roots
	Cooldown       time.Duration      // fallback_cooldown (30s)
	APITimeout     time.Duration      // patroni_api_timeout (5s)
	ConnectTimeout time.Duration      // fallback_connect_timeout (5s): per candidate, and the base per-host cooldown
	Lifetime       time.Duration      // fallback_lifetime (default: Cooldown), cut to the rest of the cooldown
	// OuterTimeout (query_wait_timeout) bounds one fallback attempt on top
	// of the caller's context; 0 leaves only the context.
	OuterTimeout time.Duration
	Fetcher      Fetcher     // replaces the Patroni client built from PatroniURLs (tests)
	Clock        Clock       // default: time.Now
	Log          *zap.Logger // default: no logging
	Metrics      Metrics     // default: none
}

// Result describes the connection Connect returned.
type Result struct {
	Target   Target
	Fallback bool          // Target is a cluster member, not the local server
	Lifetime time.Duration // for a fallback connection: fallback_lifetime, at most until the cooldown ends (MinLifetime at least); else 0
	Member   string        // Patroni member name of a fallback target
	Role     patroni.Role  // its role when discovered
	CacheHit bool          // the cached fallback host was used
	// LocalRestored is set on the first local connection after a cooldown
	// ended: the pool may retire its fallback connections early.
	LocalRestored bool
}

// State is a snapshot for admin views.
type State struct {
	LocalDownUntil time.Time // zero when the local server is not in cooldown
	Host           Target    // cached fallback host, zero if none
}

// Dialer is the fallback state of one pool. It is safe for concurrent use.
type Dialer struct {
	opts    Options
	fetcher Fetcher
	client  *patroni.Client // nil when Options.Fetcher was given
	clock   Clock
	log     *zap.Logger
	metrics Metrics
	base    context.Context // cancelled by Close
	stop    context.CancelFunc
	wg      sync.WaitGroup // background fetches and race drains

	fetchWaits atomic.Int64 // callers that waited for a /cluster answer (tests)

	mu        sync.Mutex
	downUntil time.Time  // local server in cooldown until
	wasDown   bool       // a cooldown ended and no local connect has succeeded since
	cached    *Candidate // last winner, used while downUntil is ahead
	cooldowns *cooldowns
	warns     warnLimiter
	flight    *flight
}

// New builds a Dialer; it fails only on an unusable Patroni URL or TLS
// configuration. No goroutine runs until Connect needs one.
func New(opts Options) (*Dialer, error) {
	if opts.Cooldown <= 0 {
		opts.Cooldown = DefaultCooldown
	}
	if opts.APITimeout <= 0 {
		opts.APITimeout = DefaultAPITimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.Lifetime <= 0 {
		opts.Lifetime = opts.Cooldown
	}
	d := &Dialer{opts: opts, fetcher: opts.Fetcher, clock: opts.Clock, log: opts.Log, metrics: opts.Metrics,
		cooldowns: newCooldowns(opts.ConnectTimeout)}
	if d.fetcher == nil {
		c, err := patroni.NewClient(opts.PatroniURLs, patroni.ClientOptions{Timeout: opts.APITimeout, TLS: opts.TLS})
		if err != nil {
			return nil, fmt.Errorf("new fallback dialer for pool %s: %w", opts.PoolName, err)
		}
		d.client, d.fetcher = c, c
	}
	if d.clock == nil {
		d.clock = realClock{}
	}
	if d.log == nil {
		d.log = zap.NewNop()
	}
	d.log = d.log.With(zap.String("pool", opts.PoolName))
	if d.metrics == nil {
		d.metrics = nopMetrics{}
	}
	d.base, d.stop = context.WithCancel(context.Background())
	return d, nil
}

// Close stops background work and waits for it (a /cluster fetch, closing
// late race winners). Metrics series are left alone: see RemovePool.
func (d *Dialer) Close() {
	d.stop()
	d.wg.Wait()
	if d.client != nil {
		d.client.CloseIdleConnections()
	}
}

// Options returns what the dialer runs with, its defaults filled in
// (pool settings reach it through internal/pooler).
func (d *Dialer) Options() Options { return d.opts }

// State returns a snapshot of the cooldown and the cached host.
func (d *Dialer) State() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := State{}
	if d.clock.Now().Before(d.downUntil) {
		s.LocalDownUntil = d.downUntil
	}
	if d.cached != nil {
		s.Host = d.cached.Target
	}
	return s
}

// Connect opens a server connection. Outside a cooldown it calls connect
// for local; an error that is not LocalDown (auth, "starting up", ...) or
// that came with ctx done is returned as is. A LocalDown error, or a local
// server in its cooldown, leads to a fallback round bounded by ctx and
// OuterTimeout; its errors are *RejectedError, *DeadlineError, a discovery
// error or one wrapping ErrNoCandidates. A nil Dialer just calls connect.
func (d *Dialer) Connect(ctx context.Context, local Target, connect ConnectFunc) (Conn, Result, error) {
	if d == nil {
		c, err := connect(ctx, local)
		return c, Result{Target: local}, err
	}
	if !d.localInCooldown() {
		c, err := connect(ctx, local)
		if err == nil {
			return c, Result{Target: local, LocalRestored: d.localUp()}, nil
		}
		if ctx.Err() != nil || !LocalDown(err) {
			return nil, Result{Target: local}, err
		}
		d.markLocalDown(local, err)
	}
	return d.fallback(ctx, connect)
}

// localInCooldown reports whether the local server is in its cooldown; the
// first call after the cooldown ends forgets the cached host.
func (d *Dialer) localInCooldown() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.downUntil.IsZero() {
		return false
	}
	if d.clock.Now().Before(d.downUntil) {
		return true
	}
	d.downUntil = time.Time{}
	d.wasDown = true
	d.setCachedLocked(nil)
	d.metrics.FallbackActive(d.opts.PoolName, false)
	d.log.Info("fallback cooldown over, trying the local server again")
	return false
}

func (d *Dialer) localUp() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	restored := d.wasDown
	d.wasDown = false
	return restored
}

func (d *Dialer) markLocalDown(local Target, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	if now.Before(d.downUntil) {
		return // a concurrent connect marked it already
	}
	d.downUntil = now.Add(d.opts.Cooldown)
	d.setCachedLocked(nil)
	d.metrics.FallbackActive(d.opts.PoolName, true)
	d.log.Warn("local server unavailable, using patroni fallback",
		zap.String("local", local.Address), zap.Duration("cooldown", d.opts.Cooldown), zap.Error(err))
}

// setCachedLocked replaces the cached host and the fallback_host series.
func (d *Dialer) setCachedLocked(c *Candidate) {
	if c == nil && d.cached == nil {
		return
	}
	d.cached = c
	addr := ""
	if c != nil {
		addr = c.Target.Address
	}
	d.metrics.FallbackHost(d.opts.PoolName, addr)
}

// fallback runs one fallback attempt under the outer deadline.
func (d *Dialer) fallback(ctx context.Context, connect ConnectFunc) (Conn, Result, error) {
	budget := d.opts.OuterTimeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl).Round(time.Millisecond); budget <= 0 || left < budget {
			budget = left // the caller's deadline comes first
		}
	}
	if d.opts.OuterTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.opts.OuterTimeout)
		defer cancel()
	}
	c, res, err := d.round(ctx, connect)
	if err != nil && ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = &DeadlineError{Budget: budget, Err: ctx.Err()}
			d.log.Warn(err.Error())
		} else {
			err = fmt.Errorf("fallback: %w", ctx.Err())
		}
	}
	d.metrics.FallbackConnection(d.opts.PoolName, err == nil)
	return c, res, err
}

// round uses the cached host if there is one, and runs discovery if there
// is none or it failed (once).
func (d *Dialer) round(ctx context.Context, connect ConnectFunc) (Conn, Result, error) {
	d.mu.Lock()
	cached := d.cached
	d.mu.Unlock()
	if cached == nil {
		return d.discover(ctx, connect)
	}
	d.metrics.CacheHit(d.opts.PoolName)
	c, _, _, err := d.raceWave(ctx, []Candidate{*cached}, connect)
	if err == nil {
		return c, d.result(*cached, true), nil
	}
	if ctx.Err() != nil {
		return nil, Result{}, err
	}
	d.mu.Lock()
	if d.cached != nil && d.cached.Target == cached.Target {
		d.setCachedLocked(nil)
	}
	d.mu.Unlock()
	d.log.Info("cached fallback host failed, asking patroni again", zap.String("host", cached.Target.Address))
	return d.discover(ctx, connect)
}

func (d *Dialer) result(c Candidate, cacheHit bool) Result {
	return Result{Target: c.Target, Fallback: true, Lifetime: d.lifetime(), Member: c.Name, Role: c.Role, CacheHit: cacheHit}
}

// lifetime is fallback_lifetime cut to what is left of the local server's
// cooldown, but at least MinLifetime. Without the cut, a connection opened
// late in the cooldown (the pool's pre-replacement at 95 % of the previous
// one's lifetime, with the default lifetime = cooldown) kept the pool on the
// fallback host for almost another lifetime after the cooldown, because the
// local server is only tried again when the pool needs a new connection.
func (d *Dialer) lifetime() time.Duration {
	d.mu.Lock()
	left := d.downUntil.Sub(d.clock.Now())
	d.mu.Unlock()
	return min(d.opts.Lifetime, max(left, MinLifetime))
}

// discover fetches /cluster and runs the two waves.
func (d *Dialer) discover(ctx context.Context, connect ConnectFunc) (Conn, Result, error) {
	cl, err := d.fetch(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("fallback discovery failed", zap.Error(err))
		}
		return nil, Result{}, fmt.Errorf("fallback discovery: %w", err)
	}
	d.mu.Lock()
	now := d.clock.Now()
	d.cooldowns.prune(now)
	wave1, wave2 := Waves(cl, func(addr string) bool { return d.cooldowns.blocked(addr, now) })
	d.mu.Unlock()
	if len(wave1)+len(wave2) == 0 {
		return nil, Result{}, fmt.Errorf("%w (%d members)", ErrNoCandidates, len(cl.Members))
	}
	d.log.Debug("fallback discovery", zap.Int("members", len(cl.Members)),
		zap.Int("sync_standby", len(wave1)), zap.Int("others", len(wave2)))
	total := &RejectedError{}
	for _, wave := range [][]Candidate{wave1, wave2} {
		if len(wave) == 0 {
			continue
		}
		c, i, rej, err := d.raceWave(ctx, wave, connect)
		if err == nil {
			d.mu.Lock()
			if d.clock.Now().Before(d.downUntil) {
				d.setCachedLocked(&wave[i])
			}
			d.mu.Unlock()
			d.log.Info("fallback connection established", zap.String("host", wave[i].Target.Address),
				zap.String("member", wave[i].Name), zap.String("role", string(wave[i].Role)))
			return c, d.result(wave[i], false), nil
		}
		if ctx.Err() != nil {
			return nil, Result{}, err
		}
		total.add(rej)
	}
	d.log.Warn(total.Error())
	return nil, Result{}, total
}
