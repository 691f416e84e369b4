package pool

import (
	"context"
	"errors"
	"time"
)

// ErrStopped is Acquire's answer when its Bounds.Stop fired first.
var ErrStopped = errors.New("wait for a connection stopped")

// Bounds ends a wait the way a done context would, without a context of
// its own: a wait per transaction (a pool at its size) then costs no
// context, timer or channel allocation.
type Bounds struct {
	// Deadline (zero: none) ends the wait with context.DeadlineExceeded.
	Deadline time.Time
	// Stop (nil: never) ends the wait with ErrStopped once it can be
	// received from. A queued wait whose Stop can be received from is
	// passed over by the pool's grants (a returned connection, a create
	// slot) and ended with ErrStopped, even before its goroutine runs, if
	// Stop is closed rather than sent to: a send may be taken by the
	// waiting goroutine's own select, and what it was granted meanwhile
	// then goes back through it.
	Stop <-chan struct{}
}

func (b Bounds) none() bool { return b.Deadline.IsZero() && b.Stop == nil }

// within is ctx with b folded in, for the rare paths that hand a context
// on (a connect, a coordinator permit, an idle check): ending it by Stop
// leaves ErrStopped as its cause. The cancel func must be called.
func (b Bounds) within(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.none() {
		return ctx, func() {}
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	if !b.Deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, b.Deadline)
		cancel = func() { cancelDeadline(); cancelCause(nil) }
	}
	if b.Stop != nil {
		done := ctx.Done()
		go func() {
			select {
			case <-b.Stop:
				cancelCause(ErrStopped)
			case <-done:
			}
		}()
	}
	return ctx, cancel
}

// stoppedCause turns an error of a call made under ctx (from within) into
// ErrStopped when Stop is what ended ctx.
func stoppedCause(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), ErrStopped) {
		return ErrStopped
	}
	return err
}

// createWithin is create(permitJIT) under ctx with b folded in.
func (p *Pool[T]) createWithin(ctx context.Context, b Bounds, permit Permit) (*Conn[T], error) {
	cctx, cancel := b.within(ctx)
	defer cancel()
	c, err := p.create(cctx, permit, permitJIT)
	return c, stoppedCause(cctx, err)
}

// checkoutWithin is checkout, with b folded into the context only when an
// idle check will use it.
func (p *Pool[T]) checkoutWithin(ctx context.Context, b Bounds, c *Conn[T]) (*Conn[T], bool) {
	now := p.now()
	if !c.probe || b.none() {
		return p.checkout(ctx, c, now)
	}
	cctx, cancel := b.within(ctx)
	defer cancel()
	return p.checkout(cctx, c, now)
}
