package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// queryTimeout bounds one helper query.
const queryTimeout = 30 * time.Second

// Connect opens a superuser connection over the unix socket to db
// ("" means postgres); t.Cleanup closes it.
func (c *Cluster) Connect(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	if db == "" {
		db = "postgres"
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.SuperDSN(db))
	if err != nil {
		t.Fatalf("pgtest: connect to %s/%s: %v", c.Name, db, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Exec runs sql as the superuser in database postgres on a connection of
// its own and fails the test on error.
func (c *Cluster) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	c.ExecDB(t, "postgres", sql, args...)
}

// ExecDB is Exec in database db.
func (c *Cluster) ExecDB(t testing.TB, db, sql string, args ...any) {
	t.Helper()
	err := c.withConn(db, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		t.Fatalf("pgtest: exec %q on %s: %v", sql, c.Name, err)
	}
}

// withConn runs f on a fresh superuser connection. A fresh connection per
// call keeps helpers independent of restarts and killed backends.
func (c *Cluster) withConn(db string, f func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.SuperDSN(db))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	return f(ctx, conn)
}

// QueryRow runs a query as the superuser in database postgres. Connection
// errors fail the test; query errors come back from Scan, which must be
// called exactly once (it closes the connection).
func (c *Cluster) QueryRow(t testing.TB, sql string, args ...any) pgx.Row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	conn, err := pgx.Connect(ctx, c.SuperDSN("postgres"))
	if err != nil {
		cancel()
		t.Fatalf("pgtest: connect to %s: %v", c.Name, err)
	}
	return &row{ctx: ctx, cancel: cancel, conn: conn, row: conn.QueryRow(ctx, sql, args...)}
}

type row struct {
	ctx    context.Context
	cancel context.CancelFunc
	conn   *pgx.Conn
	row    pgx.Row
}

func (r *row) Scan(dest ...any) error {
	defer r.cancel()
	defer r.conn.Close(context.Background())
	return r.row.Scan(dest...)
}

// QueryString returns the single text value of a one-row query.
func (c *Cluster) QueryString(t testing.TB, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := c.QueryRow(t, sql, args...).Scan(&s); err != nil {
		t.Fatalf("pgtest: query %q on %s: %v", sql, c.Name, err)
	}
	return s
}

// QueryInt returns the single integer value of a one-row query.
func (c *Cluster) QueryInt(t testing.TB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(t, sql, args...).Scan(&n); err != nil {
		t.Fatalf("pgtest: query %q on %s: %v", sql, c.Name, err)
	}
	return n
}

// CreateDatabase creates a database owned by postgres.
func (c *Cluster) CreateDatabase(t testing.TB, name string) {
	t.Helper()
	c.Exec(t, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// BackendPIDs lists the client backends of user ("" means every user),
// leaving out the connection that asks.
func (c *Cluster) BackendPIDs(t testing.TB, user string) []int {
	t.Helper()
	var pids []int
	err := c.withConn("postgres", func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
			AND ($1 = '' OR usename = $1) ORDER BY pid`, user)
		if err != nil {
			return err
		}
		pids, err = pgx.CollectRows(rows, pgx.RowTo[int])
		return err
	})
	if err != nil {
		t.Fatalf("pgtest: list backends of %s: %v", c.Name, err)
	}
	return pids
}

// quoteLiteral quotes s as an SQL string literal; standard_conforming_strings
// is on, so only quotes need doubling.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
