package pool

import "time"

type connState uint8

const (
	stateIdle connState = iota
	stateBusy
	stateClosed
)

// Conn is one pooled connection. Value is the caller's; the rest is the
// pool's bookkeeping, guarded by the pool's mutex.
type Conn[T Resource] struct {
	Value T

	pool        *Pool[T]
	createdAt   time.Time
	returnedAt  time.Time
	lifetime    time.Duration // jittered server_lifetime, 0 = forever
	idleTimeout time.Duration // jittered idle_timeout, 0 = forever
	epoch       uint64
	used        bool // served at least one client
	state       connState
	permit      Permit // the coordinator permit, nil without one
	replaced    bool   // a pre-replacement was opened for it
	probe       bool   // checkout probes it: decided under the pool's lock when it left idle, cleared when it comes back
}

// CreatedAt is when the connection was opened.
func (c *Conn[T]) CreatedAt() time.Time { return c.createdAt }

// Probed reports whether the checkout that gave c to its holder ran the
// idle probe on it (Options.Check, for a connection idle past
// IdleCheckTimeout) and the probe passed. Only the holder may ask, before
// it gives c back.
func (c *Conn[T]) Probed() bool { return c.probe }

// Epoch is the pool epoch the connection was opened in.
func (c *Conn[T]) Epoch() uint64 { return c.epoch }

func (c *Conn[T]) lifetimeExceeded(now time.Time) bool {
	return c.lifetime > 0 && now.Sub(c.createdAt) >= c.lifetime
}

func (c *Conn[T]) idleExpired(now time.Time) bool {
	return c.used && c.idleTimeout > 0 && now.Sub(c.returnedAt) >= c.idleTimeout
}

func (c *Conn[T]) closeValue() {
	_ = c.Value.Close()
	if c.permit != nil {
		c.permit.Release()
		c.permit = nil
	}
}
