package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The statements of the workload. pgbench's tables, filled by pgbench -i.
const (
	sqlSelect    = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
	sqlAccounts  = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
	sqlTellers   = "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2"
	sqlBranches  = "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2"
	sqlHistory   = "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
	sqlBig       = "SELECT repeat('x', 1000) FROM generate_series(1, 10000)"
	sqlCopyOut   = "COPY (SELECT aid, abalance FROM pgbench_accounts WHERE aid BETWEEN %d AND %d ORDER BY aid) TO STDOUT"
	sqlCopyClean = "DELETE FROM soak_copy WHERE worker = $1 AND batch = $2"

	copyRows = 1000
	bigRows  = 10000
	bigWidth = 1000
)

// sqlSetup creates the COPY target; each COPY deletes its own batch again.
const sqlSetup = `CREATE TABLE IF NOT EXISTS soak_copy (worker int NOT NULL, batch bigint NOT NULL, n int NOT NULL, payload text NOT NULL);
CREATE INDEX IF NOT EXISTS soak_copy_batch ON soak_copy (worker, batch)`

// errKilled marks the error a kill provoked on its own connection.
var errKilled = errors.New("connection killed by the soak test")

// pgbench's row counts per unit of scale.
const (
	accountsPerScale = 100000
	tellersPerScale  = 10
)

// ids are random pgbench row ids.
type ids struct{ aid, tid, bid, delta int }

func randomIDs(r *rand.Rand, scale int) ids {
	return ids{
		aid: r.IntN(scale*accountsPerScale) + 1, tid: r.IntN(scale*tellersPerScale) + 1,
		bid: r.IntN(scale) + 1, delta: r.IntN(10001) - 5000,
	}
}

// selectOnly is pgbench -S over the simple protocol.
func (w *worker) selectOnly(ctx context.Context, mode pgx.QueryExecMode) error {
	var balance int
	aid := randomIDs(w.rng, w.scale).aid
	if err := w.conn.QueryRow(ctx, sqlSelect, mode, aid).Scan(&balance); err != nil {
		return fmt.Errorf("select aid %d: %w", aid, err)
	}
	return nil
}

// tpcb is pgbench's tpcb-like transaction in the given exec mode.
func (w *worker) tpcb(ctx context.Context, mode pgx.QueryExecMode) (err error) {
	id := randomIDs(w.rng, w.scale)
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
		}
	}()
	updates := []struct {
		sql string
		id  int
	}{{sqlAccounts, id.aid}, {sqlTellers, id.tid}, {sqlBranches, id.bid}}
	for i, u := range updates {
		tag, err := tx.Exec(ctx, u.sql, mode, id.delta, u.id)
		if err != nil {
			return fmt.Errorf("tpcb update %d: %w", i+1, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("tpcb update %d changed %d rows, want 1", i+1, tag.RowsAffected())
		}
		if i == 0 {
			var balance int
			if err := tx.QueryRow(ctx, sqlSelect, mode, id.aid).Scan(&balance); err != nil {
				return fmt.Errorf("tpcb select: %w", err)
			}
		}
	}
	if _, err := tx.Exec(ctx, sqlHistory, mode, id.tid, id.bid, id.aid, id.delta); err != nil {
		return fmt.Errorf("tpcb insert history: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("tpcb commit: %w", err)
	}
	return nil
}

// prepared runs pgbench -S or tpcb-like through pgx's statement cache: named
// prepared statements that pg_doorman must carry across server connections.
func (w *worker) prepared(ctx context.Context) error {
	if w.rng.IntN(10) < 7 {
		return w.selectOnly(ctx, pgx.QueryExecModeCacheStatement)
	}
	return w.tpcb(ctx, pgx.QueryExecModeCacheStatement)
}

// copyIn copies copyRows rows into soak_copy and deletes them again.
func (w *worker) copyIn(ctx context.Context) error {
	payload := strings.Repeat("p", 100)
	w.batch++
	src := pgx.CopyFromSlice(copyRows, func(i int) ([]any, error) { return []any{w.id, w.batch, i, payload}, nil })
	n, err := w.conn.CopyFrom(ctx, pgx.Identifier{"soak_copy"}, []string{"worker", "batch", "n", "payload"}, src)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	if n != copyRows {
		return fmt.Errorf("copy in wrote %d rows, want %d", n, copyRows)
	}
	tag, err := w.conn.Exec(ctx, sqlCopyClean, w.id, w.batch)
	if err != nil {
		return fmt.Errorf("delete copied rows: %w", err)
	}
	if tag.RowsAffected() != copyRows {
		return fmt.Errorf("delete copied rows removed %d, want %d", tag.RowsAffected(), copyRows)
	}
	return nil
}

// copyOut copies copyRows accounts out and counts the lines.
func (w *worker) copyOut(ctx context.Context) error {
	first := w.rng.IntN(w.scale*accountsPerScale-copyRows) + 1
	var buf bytes.Buffer
	sql := fmt.Sprintf(sqlCopyOut, first, first+copyRows-1)
	if _, err := w.conn.PgConn().CopyTo(ctx, &buf, sql); err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	if n := bytes.Count(buf.Bytes(), []byte{'\n'}); n != copyRows {
		return fmt.Errorf("copy out gave %d lines, want %d", n, copyRows)
	}
	return nil
}

// big reads a 10 MB result fully and checks every row.
func (w *worker) big(ctx context.Context) error {
	rows, err := w.conn.Query(ctx, sqlBig)
	if err != nil {
		return fmt.Errorf("big result: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if v := rows.RawValues(); len(v) != 1 || len(v[0]) != bigWidth {
			return fmt.Errorf("big result row %d is malformed", n+1)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("big result after %d rows: %w", n, err)
	}
	if n != bigRows {
		return fmt.Errorf("big result gave %d rows, want %d", n, bigRows)
	}
	return nil
}

// kill closes the connection's socket under pgx, half the time with an RST
// (SetLinger(0)) instead of a FIN.
func (w *worker) kill() {
	nc := w.conn.PgConn().Conn()
	if tc, ok := nc.(*net.TCPConn); ok && w.rng.IntN(2) == 0 {
		_ = tc.SetLinger(0)
	}
	_ = nc.Close()
}

// killIdle kills the idle connection; the next use must fail.
func (w *worker) killIdle(ctx context.Context) error {
	w.kill()
	return afterKill("ping", w.conn.Ping(ctx))
}

// killInTx updates a row in a transaction and kills the connection, either
// idle in the transaction or in the middle of a result inside it; the
// commit must fail and the update must not survive (not checked here: the
// server rolls back on disconnect).
func (w *worker) killInTx(ctx context.Context) error {
	id := randomIDs(w.rng, w.scale)
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if _, err := tx.Exec(ctx, sqlAccounts, pgx.QueryExecModeExec, id.delta, id.aid); err != nil {
		return fmt.Errorf("update before kill: %w", err)
	}
	if w.rng.IntN(2) == 0 {
		w.kill()
	} else if err := w.readThenKill(ctx, tx); !errors.Is(err, errKilled) {
		return err
	}
	return afterKill("commit", tx.Commit(ctx))
}

// killResult starts a 10 MB result and kills the connection part way.
func (w *worker) killResult(ctx context.Context) error {
	return w.readThenKill(ctx, w.conn)
}

// querier is a *pgx.Conn or a pgx.Tx.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readThenKill reads a random part of the big result, kills the connection
// and expects the rest of the result to fail.
func (w *worker) readThenKill(ctx context.Context, q querier) error {
	rows, err := q.Query(ctx, sqlBig)
	if err != nil {
		return fmt.Errorf("big result before kill: %w", err)
	}
	defer rows.Close()
	stop := w.rng.IntN(bigRows / 2)
	n := 0
	for n < stop && rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("big result before kill: %w", err)
	}
	if n < stop {
		return fmt.Errorf("big result ended after %d rows, before the kill at row %d", n, stop)
	}
	w.kill()
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err == nil {
		// Not a pooler's doing: a closed socket cannot be read. Say how
		// far the result had got, to tell a kill that came too late (all
		// rows already in the client's buffer) from a short result.
		return fmt.Errorf("rest of result succeeded on a killed connection (%d rows in all, kill after %d)", n, stop)
	}
	return afterKill("rest of result", rows.Err())
}

// afterKill turns the error of the first use of a killed connection into
// errKilled; success would mean the kill did not happen.
func afterKill(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%s succeeded on a killed connection", what)
	}
	return fmt.Errorf("%s: %w: %w", what, errKilled, err)
}
