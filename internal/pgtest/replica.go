package pgtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// AddReplica makes a streaming replica of c with pg_basebackup -R, starts it
// on its own port and socket, and waits until c's pg_stat_replication shows
// it streaming. It shares c's options, users and pg_hba lines; t.Cleanup
// removes it.
func (c *Cluster) AddReplica(t testing.TB) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	r, err := newCluster(ctx, c.opts, c)
	if err != nil {
		t.Fatalf("pgtest: add replica to %s: %v", c.Name, err)
	}
	t.Cleanup(func() { r.cleanup(t) })
	err = c.poll(ctx, func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication
			WHERE application_name = $1 AND state = 'streaming'`, r.Name).Scan(&n)
		return n > 0, err
	})
	if err != nil {
		t.Fatalf("pgtest: replica %s did not start streaming: %v; replica log:\n%s", r.Name, err, r.logTail(30))
	}
	return r
}

// Promote turns a replica into a primary and waits until it leaves recovery.
func (c *Cluster) Promote(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err := c.poll(ctx, func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		var inRecovery bool
		if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil || !inRecovery {
			return !inRecovery, err
		}
		// pg_promote waits up to 60 s for the end of recovery.
		_, err := conn.Exec(ctx, "SELECT pg_promote(true, 60)")
		return false, err
	})
	if err != nil {
		t.Fatalf("pgtest: promote %s: %v; log:\n%s", c.Name, err, c.logTail(30))
	}
}

// WaitReplay waits until replica has replayed everything c had written when
// WaitReplay was called, e.g. a role just made by CreateUser.
func (c *Cluster) WaitReplay(t testing.TB, replica *Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var lsn string
	err := c.withConn("postgres", func(ctx context.Context, conn *pgx.Conn) error {
		// The insert position: with synchronous_commit off the last commit
		// may not be written yet, and pg_current_wal_lsn() is the write one.
		return conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn)
	})
	if err == nil {
		err = replica.poll(ctx, func(ctx context.Context, conn *pgx.Conn) (bool, error) {
			var done bool
			err := conn.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&done)
			return done, err
		})
	}
	if err != nil {
		t.Fatalf("pgtest: wait for %s to replay %s: %v", replica.Name, lsn, err)
	}
}

// poll runs check on a superuser connection until it reports true, an
// error, or ctx ends.
func (c *Cluster) poll(ctx context.Context, check func(context.Context, *pgx.Conn) (bool, error)) error {
	conn, err := pgx.Connect(ctx, c.SuperDSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	for {
		ok, err := check(ctx, conn)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.New("timed out")
		case <-time.After(pollInterval):
		}
	}
}
