package authquery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/doorman-go/doorman/internal/backend"
)

// Dial opens one executor connection, logged in as auth_query.user.
type Dial func(ctx context.Context) (*backend.Conn, error)

// Bounds of one lookup result: the query is meant to return one row with
// one verifier (a SCRAM verifier is about 130 bytes).
const (
	maxResultRows  = 4
	maxResultBytes = 64 << 10
)

// ErrBadResult is returned for a lookup whose result has no usable
// column or more than one row.
var ErrBadResult = errors.New("auth_query result")

// Executor runs the lookup query on at most len(slots) connections of its
// own. A slot holds its connection between lookups (nil until dialled or
// after it broke); whoever takes a slot from the channel owns it until it
// puts it back.
type Executor struct {
	query string
	dial  Dial
	stats *Stats
	slots chan *backend.Conn

	mu     sync.Mutex
	closed bool
}

// NewExecutor builds an executor with workers slots. No connection is
// opened until Warm or the first lookup.
func NewExecutor(query string, workers int, dial Dial, stats *Stats) *Executor {
	workers = max(workers, 1)
	e := &Executor{query: query, dial: dial, stats: stats, slots: make(chan *backend.Conn, workers)}
	for range workers {
		e.slots <- nil
	}
	return e
}

// Warm opens every connection it can now (at start, so that the first
// logins do not pay the connect); failures are counted (WarmErrors) and
// left to the lookups.
func (e *Executor) Warm(ctx context.Context) error {
	var errs []error
	for range cap(e.slots) {
		var c *backend.Conn
		select {
		case c = <-e.slots:
		case <-ctx.Done():
			return ctx.Err()
		}
		if c == nil {
			var err error
			if c, err = e.dial(ctx); err != nil {
				if ctx.Err() == nil { // not a failure: we are stopping
					e.stats.WarmErrors.Add(1)
				}
				errs = append(errs, err)
				c = nil
			}
		}
		e.put(c)
	}
	return errors.Join(errs...)
}

// Lookup runs the query for user. A connection found broken is replaced
// and the query retried once, so a PostgreSQL restart costs no login.
func (e *Executor) Lookup(ctx context.Context, user string) (Entry, error) {
	var c *backend.Conn
	select {
	case c = <-e.slots:
	case <-ctx.Done():
		// Every executor connection stayed busy for the whole lookup:
		// a failed lookup too, and the sign of too few workers.
		e.stats.ExecutorErrors.Add(1)
		return Entry{}, fmt.Errorf("wait for an auth_query connection: %w", ctx.Err())
	}
	reused := c != nil
	ent, c, err := e.run(ctx, c, user)
	if err != nil && reused && c == nil && ctx.Err() == nil {
		ent, c, err = e.run(ctx, nil, user)
	}
	e.put(c)
	if err != nil {
		e.stats.ExecutorErrors.Add(1)
	}
	return ent, err
}

// run queries on c (dialling when nil); the connection returned is nil
// when it broke.
func (e *Executor) run(ctx context.Context, c *backend.Conn, user string) (Entry, *backend.Conn, error) {
	if c == nil {
		var err error
		if c, err = e.dial(ctx); err != nil {
			return Entry{}, nil, fmt.Errorf("auth_query connect: %w", err)
		}
	}
	e.stats.ExecutorQueries.Add(1)
	res, err := c.Query(ctx, e.query, []string{user}, maxResultRows, maxResultBytes)
	if c.Broken || c.TxStatus != 'I' {
		_ = c.Close()
		c = nil
	}
	if err != nil {
		return Entry{}, c, fmt.Errorf("auth_query: %w", err)
	}
	ent, err := pick(res)
	return ent, c, err
}

// put gives a slot back, closing its connection when the executor closed.
func (e *Executor) put(c *backend.Conn) {
	e.mu.Lock()
	if e.closed && c != nil {
		_ = c.Close()
		c = nil
	}
	e.mu.Unlock()
	e.slots <- c
}

// Close closes the idle connections and makes busy ones close when their
// lookup ends. A lookup after Close still works, on a connection closed
// when it ends.
func (e *Executor) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	taken := 0
drain:
	for taken < cap(e.slots) {
		select {
		case c := <-e.slots:
			if c != nil {
				_ = c.Close()
			}
			taken++
		default:
			break drain
		}
	}
	for range taken {
		e.slots <- nil
	}
}

// pick takes the verifier out of a lookup result: the only column, or
// the one named passwd or password. No row, NULL or an empty value mean
// the user cannot log in with a password.
func pick(res Result) (Entry, error) {
	col := -1
	if len(res.Columns) == 1 {
		col = 0
	}
	for i, name := range res.Columns {
		if col < 0 && (strings.EqualFold(name, "passwd") || strings.EqualFold(name, "password")) {
			col = i
		}
	}
	switch {
	case col < 0:
		return Entry{}, fmt.Errorf("%w: no column named passwd or password among %d", ErrBadResult, len(res.Columns))
	case len(res.Rows) > 1:
		return Entry{}, fmt.Errorf("%w: %d rows for one user", ErrBadResult, len(res.Rows))
	case len(res.Rows) == 0 || res.Rows[0][col] == nil || *res.Rows[0][col] == "":
		return Entry{}, nil
	}
	return Entry{Verifier: *res.Rows[0][col], Found: true}, nil
}

// Result is the backend's query result.
type Result = backend.Result
