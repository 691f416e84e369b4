package pooler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/prepared"
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

	sawPrimary atomic.Bool // the last local server connection handed out said in_hot_standby=off

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
// (0 = no waiting: an idle connection or a connect now) and counts the
// wait.
func (p *Pool) Acquire(ctx context.Context) (*Conn, error) { return p.AcquireFor(ctx, nil) }

// Waiter hears when a client starts and stops waiting in AcquireFor, and
// can stop the wait: a cancel request for a statement that has no server
// yet. Waiting and DoneWaiting are called only when no idle connection was
// free at once, never on the hot path.
type Waiter interface {
	// Waiting returns the channel (nil: none) a receive from which stops
	// the wait with ErrCanceled. The Waiter owns it and may reuse it for
	// its next wait: whatever was sent and not received is its to drain
	// in DoneWaiting.
	Waiting() (stop <-chan struct{})
	// DoneWaiting ends the wait, which lasted wait; queued is false when a
	// connection came within the pool's anticipation spin
	// (pool.AcquireWaited), so that the client did not wait in the queue,
	// for a connect or for a pause.
	DoneWaiting(queued bool, wait time.Duration)
}

// ErrCanceled: the wait was stopped through the Waiter (the client's
// cancel request), as PostgreSQL cancels a statement.
var ErrCanceled = errors.New("canceling statement due to user request")

// AcquireFor is Acquire for a client that may stop its wait (w may be
// nil).
func (p *Pool) AcquireFor(ctx context.Context, w Waiter) (*Conn, error) {
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
	// The wait's bounds are a deadline and a channel, not contexts: a
	// pool at its size waits on every transaction, and a context per
	// wait would be two allocations, a timer and a child registration.
	start := time.Now()
	var b pool.Bounds
	if w != nil {
		b.Stop = w.Waiting()
	}
	if d := s.General.QueryWaitTimeout; d > 0 {
		b.Deadline = start.Add(d)
	}
	p.Stats.ClientsWaiting.Add(1)
	c, queued, err := p.conns.AcquireWaited(ctx, b)
	p.Stats.ClientsWaiting.Add(-1)
	wait := time.Since(start)
	if w != nil {
		w.DoneWaiting(queued, wait)
	}
	p.Stats.WaitTime.Add(uint64(wait.Microseconds()))
	p.Stats.WaitCount.Add(1)
	if err != nil {
		if errors.Is(err, pool.ErrStopped) {
			p.Stats.WaitsCanceled.Add(1)
			return nil, ErrCanceled
		}
		// The wait's own deadline is the bare sentinel (package pool
		// returns context.DeadlineExceeded as it is), or a connect that
		// reached it while waiting for a database permit (permit). A
		// connect that ran out of connect_timeout wraps it in a
		// *backend.ConnectError: that is a failed connect, not a wait
		// timeout, and errors.Is would take one for the other.
		if err == context.DeadlineExceeded || errors.Is(err, errPermitWaitTimeout) {
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

// Release returns a clean connection; Destroy drops a broken one. It
// reports a backlog: a waiting client got c and more still wait.
func (p *Pool) Release(c *Conn) (backlog bool) { return p.ReleaseAt(c, time.Time{}) }

// ReleaseAt is Release with the caller's reading of the clock (an event
// loop's, taken once per batch); zero reads it.
func (p *Pool) ReleaseAt(c *Conn, now time.Time) (backlog bool) {
	if c.Value.Broken {
		p.Destroy(c)
		return false
	}
	return p.conns.ReleaseAt(c, now)
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
// only when that connection next runs a statement. A connection the
// checkout probed (idle past server_idle_check_timeout) has just run one.
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
	if err == nil && !c.Probed() { // a probe ran the same empty statement
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
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == context.DeadlineExceeded {
			// The connect's context ends at its client's wait deadline
			// (query_wait_timeout): that came while it waited for a
			// permit, before any connect began.
			return nil, fmt.Errorf("%w: %w", errPermitWaitTimeout, err)
		}
		return nil, err
	}
	return pm, nil
}

// errPermitWaitTimeout marks a connect that ran out of its client's wait
// while it waited for a database permit: AcquireFor reports it as the
// wait timeout it is, whichever of the two noticed the deadline first.
var errPermitWaitTimeout = errors.New("query_wait_timeout while waiting for a database permit")

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
