package bdd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cucumber/godog"
	"github.com/jackc/pgx/v5"
)

// registerPoolerSteps: starting pg_doorman and using it as a client.
func (s *scenario) registerPoolerSteps(sc *godog.ScenarioContext) {
	sc.Step(`^pg_doorman(?: with shutdown_timeout (\S+))? serves database "([^"]*)" to user "([^"]*)" in (transaction|session) mode with pool_size (\d+)$`, s.doormanServes)
	sc.Step(`^client "([^"]*)" connects to "([^"]*)" as "([^"]*)" with password "([^"]*)"$`, s.clientConnects)
	sc.Step(`^within (\S+) client "([^"]*)" connects to "([^"]*)" as "([^"]*)" with password "([^"]*)"$`, s.clientConnectsWithin)
	sc.Step(`^a client connecting to "([^"]*)" as "([^"]*)" with password "([^"]*)" is refused with SQLSTATE "([^"]*)"$`, s.clientRefused)
	sc.Step(`^a new client can run "([^"]*)" on "([^"]*)" as "([^"]*)" with password "([^"]*)"$`, s.newClientRuns)
	sc.Step(`^no new client can connect to "([^"]*)" as "([^"]*)" with password "([^"]*)"$`, s.noNewClient)
	sc.Step(`^client "([^"]*)" runs "([^"]*)" and gets "([^"]*)"$`, s.clientRunsAndGets)
	sc.Step(`^client "([^"]*)" begins a transaction and inserts a row into "([^"]*)"$`, s.clientBeginsAndInserts)
	sc.Step(`^client "([^"]*)" commits successfully$`, s.clientCommits)
	sc.Step(`^client "([^"]*)" cannot commit$`, s.clientCannotCommit)
	sc.Step(`^client "([^"]*)" is disconnected(?: with SQLSTATE "([^"]*)")? within (\S+)$`, s.clientDisconnectedWithin)
	s.registerLoadSteps(sc)
	s.registerKillSteps(sc)
}

func (s *scenario) doormanServes(shutdownTimeout, db, user, mode string, poolSize int) error {
	if err := s.needPG(); err != nil {
		return err
	}
	verifier, ok := s.users[user]
	if !ok {
		return fmt.Errorf("user %q was not created on PostgreSQL in this scenario", user)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.config = doormanConfig{Port: port, SocketDir: s.dir, ShutdownTimeout: shutdownTimeout, ServerPort: s.pg.Port}
	s.config.addPool(db, mode, userConfig{Name: user, Verifier: verifier, PoolSize: poolSize})
	d, err := startDoorman(s.t, s.dir, s.config)
	if err != nil {
		return err
	}
	s.doorman = d
	return nil
}

func (s *scenario) clientConnects(name, db, user, password string) error {
	conn, err := s.connect(db, user, password)
	if err != nil {
		return fmt.Errorf("client %s: connect to %s as %s: %w", name, db, user, err)
	}
	s.clients[name] = &client{conn: conn}
	return nil
}

func (s *scenario) clientConnectsWithin(timeout, name, db, user, password string) error {
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return err
	}
	var last error
	err = poll(d, "client "+name+" connects to "+db, func() (bool, error) {
		last = s.clientConnects(name, db, user, password)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w: last error: %w", err, last)
	}
	return nil
}

func (s *scenario) clientRefused(db, user, password, code string) error {
	conn, err := s.connect(db, user, password)
	if err == nil {
		closeConn(conn)
		return fmt.Errorf("connection to %s as %s was accepted, want SQLSTATE %s", db, user, code)
	}
	if got := sqlState(err); got != code {
		return fmt.Errorf("connection refused with SQLSTATE %q, want %q: %w", got, code, err)
	}
	return nil
}

func (s *scenario) newClientRuns(sql, db, user, password string) error {
	conn, err := s.connect(db, user, password)
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	defer closeConn(conn)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("new client: %s: %w", sql, err)
	}
	return nil
}

func (s *scenario) noNewClient(db, user, password string) error {
	conn, err := s.connect(db, user, password)
	if err == nil {
		closeConn(conn)
		return fmt.Errorf("a new client could connect to %s", db)
	}
	return nil
}

func (s *scenario) clientRunsAndGets(name, sql, want string) error {
	c, err := s.client(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	var got string
	if err := c.conn.QueryRow(ctx, sql, pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil {
		return fmt.Errorf("client %s: %s: %w", name, sql, err)
	}
	if got != want {
		return fmt.Errorf("client %s: %s returned %q, want %q", name, sql, got, want)
	}
	return nil
}

func (s *scenario) clientBeginsAndInserts(name, table string) error {
	c, err := s.client(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	tx, err := c.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("client %s: begin: %w", name, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+pgx.Identifier{table}.Sanitize()+" (note) VALUES ($1)", name); err != nil {
		return fmt.Errorf("client %s: insert: %w", name, err)
	}
	c.tx = tx
	return nil
}

func (s *scenario) clientCommits(name string) error {
	c, err := s.client(name)
	if err != nil {
		return err
	}
	if c.tx == nil {
		return fmt.Errorf("client %s has no open transaction", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	err = c.tx.Commit(ctx)
	c.tx = nil
	if err != nil {
		return fmt.Errorf("client %s: commit: %w", name, err)
	}
	s.lastCommitAt = time.Now()
	return nil
}

func (s *scenario) clientCannotCommit(name string) error {
	c, err := s.client(name)
	if err != nil {
		return err
	}
	if c.tx == nil {
		return fmt.Errorf("client %s has no open transaction", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	err = c.tx.Commit(ctx)
	c.tx = nil
	if err == nil {
		return fmt.Errorf("client %s: commit succeeded, want an error", name)
	}
	s.t.Logf("client %s: commit failed as expected: %v", name, err)
	return nil
}

// clientDisconnectedWithin waits for pg_doorman to close the client's
// connection. It only reads: a query sent to find out would make the
// client busy, and a busy client is rightly kept during a shutdown. With
// a code, the last bytes received must hold an ErrorResponse with it.
func (s *scenario) clientDisconnectedWithin(name, code, timeout string) error {
	c, err := s.client(name)
	if err != nil {
		return err
	}
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return err
	}
	nc := c.conn.PgConn().Conn()
	if err := nc.SetReadDeadline(time.Now().Add(d)); err != nil {
		return fmt.Errorf("client %s: %w", name, err)
	}
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := nc.Read(buf)
		got = append(got, buf[:n]...)
		switch {
		case err == nil:
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Errorf("client %s still connected %s later (received %q)", name, d, got)
		default:
			s.t.Logf("client %s disconnected (%v) after receiving %q", name, err, got)
			if code != "" && !hasErrorCode(got, code) {
				return fmt.Errorf("client %s was disconnected without an error with SQLSTATE %s (received %q)", name, code, got)
			}
			return nil
		}
	}
}
