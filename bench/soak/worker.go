package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// opTimeout bounds one piece of work, login included, so that a hung
// pg_doorman shows up as unexpected errors instead of a silent stall.
const opTimeout = time.Minute

// closeTimeout bounds closing a connection politely.
const closeTimeout = 5 * time.Second

// worker is one client. Its goroutine owns the worker, its connection and
// its random source; it shares only the Counters.
type worker struct {
	id       int
	batch    int64 // of the last COPY in
	scale    int
	mix      Mix
	cfg      *pgx.ConnConfig // shared, read only
	rng      *rand.Rand
	conn     *pgx.Conn // nil when not connected
	counters *Counters
	report   func(Kind, error) // called for every new distinct unexpected error
}

// run loops until ctx is done.
func (w *worker) run(ctx context.Context) {
	defer w.closeConn()
	for ctx.Err() == nil {
		k := w.mix.Pick(w.rng)
		o, err := w.step(ctx, k)
		if o != OK && o != Expected {
			w.closeConn() // start over on a fresh connection
		}
		if o == Unexpected && ctx.Err() != nil {
			o = Cut // the run ended under it
		}
		if w.counters.Add(k, o, err) {
			w.report(k, err)
		}
	}
}

// step connects when needed and runs one piece of work of kind k.
func (w *worker) step(ctx context.Context, k Kind) (Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if w.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, w.cfg)
		if err != nil {
			if ctx.Err() == nil && w.counters.Add(KindConnect, Unexpected, err) {
				w.report(KindConnect, err)
			}
			backoff(ctx)    // do not spin on a refusing pooler
			return Cut, nil // counted as a connect error, not against k
		}
		w.counters.Add(KindConnect, OK, nil)
		w.conn = conn
	}
	err := w.do(ctx, k)
	if k.IsKill() {
		w.closeConn()
	}
	return classify(k, err), err
}

// do runs kind k on the open connection.
func (w *worker) do(ctx context.Context, k Kind) error {
	switch k {
	case KindSelect:
		return w.selectOnly(ctx, pgx.QueryExecModeSimpleProtocol)
	case KindTPCB:
		return w.tpcb(ctx, pgx.QueryExecModeExec)
	case KindPrepared:
		return w.prepared(ctx)
	case KindCopyIn:
		return w.copyIn(ctx)
	case KindCopyOut:
		return w.copyOut(ctx)
	case KindBig:
		return w.big(ctx)
	case KindKillIdle:
		return w.killIdle(ctx)
	case KindKillInTx:
		return w.killInTx(ctx)
	case KindKillResult:
		return w.killResult(ctx)
	}
	panic(fmt.Sprintf("BUG: soak worker cannot run %s", k))
}

// classify is the outcome of work of kind k that returned err: errors a
// kill provoked on its own connection are expected, all others are not.
func classify(k Kind, err error) Outcome {
	switch {
	case err == nil:
		return OK
	case k.IsKill() && errors.Is(err, errKilled):
		return Expected
	default:
		return Unexpected
	}
}

// connectBackoff is the pause after a failed login.
const connectBackoff = 100 * time.Millisecond

func backoff(ctx context.Context) {
	t := time.NewTimer(connectBackoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (w *worker) closeConn() {
	if w.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = w.conn.Close(ctx)
	w.conn = nil
}
