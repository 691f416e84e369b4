package coordinator

import (
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the spec for the settings a caller may leave unset.
const (
	DefaultReservePoolTimeout    = 3000 * time.Millisecond
	DefaultMinConnectionLifetime = 30000 * time.Millisecond
)

// Config is the coordinator policy of one database. Values are used as
// given: defaults belong to the config loader (see the Default* constants).
type Config struct {
	Database              string
	MaxDBConnections      int           // main permits; must be > 0
	ReservePoolSize       int           // reserve permits on top of main
	ReservePoolTimeout    time.Duration // budget of phase C (0: no wait)
	MinConnectionLifetime time.Duration // younger connections are never evicted
	MinGuaranteedPoolSize int           // pool-level floor against eviction
}

// Load is what the coordinator needs to know about a user pool.
type Load struct {
	Idle   int           // idle connections (eviction candidates)
	Total  int           // connections holding a permit: idle + busy, not creates still asking
	Queued int           // clients waiting for a connection
	P95    time.Duration // cached p95 transaction time (the stats cycle's value)
}

// Member is a user pool as the coordinator sees it. Its methods are never
// called with the coordinator's lock held.
type Member interface {
	// Load returns the pool's current numbers.
	Load() Load
	// EvictIdle closes one idle connection older than minAge, and only if
	// the pool holds more than floor connections (the effective minimum),
	// so that it never goes below it. The connection's permit must be
	// released before EvictIdle returns. It reports whether one was closed.
	EvictIdle(minAge time.Duration, floor int) bool
}

// Coordinator limits the backend connections of one database.
type Coordinator struct {
	cfg   Config
	clock Clock

	idleGen  atomic.Uint64 // bumped by every idle return
	nWaiting atomic.Int64  // mirrors len(waiters) for the lock-free check

	mu          sync.Mutex
	mainUsed    int       // guarded by mu
	reserveUsed int       // guarded by mu
	waiters     []*waiter // guarded by mu; phase C, unordered
	users       []*User   // guarded by mu; registered members
	seq         uint64    // guarded by mu; arrival order of waits
	counters    Counters  // guarded by mu
}

// Counters are the monotonic event counts of SHOW POOL_COORDINATOR.
type Counters struct {
	Evictions           uint64 // idle connections closed for another user
	ReserveAcquisitions uint64 // reserve permits granted
	Exhaustions         uint64 // requests that ended in phase E
}

// New builds the coordinator of one database. MaxDBConnections must be
// positive: with 0 the caller creates no coordinator at all.
func New(cfg Config, clock Clock) *Coordinator {
	if cfg.MaxDBConnections <= 0 {
		panic("BUG: coordinator.New with max_db_connections <= 0")
	}
	if clock == nil {
		clock = SystemClock{}
	}
	if cfg.ReservePoolSize < 0 {
		cfg.ReservePoolSize = 0
	}
	return &Coordinator{cfg: cfg, clock: clock}
}

// Config returns the policy the coordinator was built with. There is no
// SetConfig: a reload that changes the policy builds a new Coordinator;
// permits of the old one stay valid until released.
func (c *Coordinator) Config() Config { return c.cfg }

// User is the handle of one registered user pool.
type User struct {
	c       *Coordinator
	name    string
	minPool int
	m       Member
}

// Register adds a user pool. minPoolSize is the user's min_pool_size; the
// effective minimum is max(minPoolSize, MinGuaranteedPoolSize).
func (c *Coordinator) Register(user string, minPoolSize int, m Member) *User {
	u := &User{c: c, name: user, minPool: minPoolSize, m: m}
	c.mu.Lock()
	c.users = append(c.users, u)
	c.mu.Unlock()
	return u
}

// Unregister removes the user pool from the donor list. Permits it still
// holds stay valid and must still be released.
func (u *User) Unregister() {
	c := u.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.users {
		if x == u {
			c.users = append(c.users[:i], c.users[i+1:]...)
			return
		}
	}
}

// Name is the user name given to Register.
func (u *User) Name() string { return u.name }

// EffectiveMin is max(min_pool_size, min_guaranteed_pool_size).
func (u *User) EffectiveMin() int { return max(u.minPool, u.c.cfg.MinGuaranteedPoolSize) }

// Coordinator returns the coordinator u is registered with.
func (u *User) Coordinator() *Coordinator { return u.c }
