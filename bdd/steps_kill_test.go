package bdd

import (
	"context"
	"fmt"
	"time"

	"github.com/cucumber/godog"
)

func (s *scenario) registerKillSteps(sc *godog.ScenarioContext) {
	sc.Step(`^client "([^"]*)" is inside a transaction running "([^"]*)"$`, s.clientInsideTransactionRunning)
	sc.Step(`^the PostgreSQL backend serving client "([^"]*)" is killed$`, s.backendKilled)
	sc.Step(`^client "([^"]*)" gets an error within (\S+)$`, s.clientGetsErrorWithin)
}

// clientInsideTransactionRunning begins a transaction, notes the backend
// serving it, and starts sql in the background; it returns once
// PostgreSQL shows the query running.
func (s *scenario) clientInsideTransactionRunning(name, sql string) error {
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
	c.tx = tx
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&c.backendPID); err != nil {
		return fmt.Errorf("client %s: backend pid: %w", name, err)
	}
	c.pending = make(chan queryResult, 1)
	qctx, qcancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := tx.Exec(qctx, sql)
		c.pending <- queryResult{err: err, at: time.Now()}
	}()
	// Runs before the connection is closed: a pgx.Conn is not safe for
	// concurrent use.
	s.t.Cleanup(func() { qcancel(); <-done })
	return poll(5*time.Second, "PostgreSQL shows the query of client "+name+" running", func() (bool, error) {
		var active bool
		err := s.superQuery("postgres", `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE pid = $1 AND state = 'active' AND query = $2)`, []any{c.backendPID, sql}, &active)
		return active, err
	})
}

// backendKilled sends SIGKILL to the backend; the harness returns once
// PostgreSQL has recovered from the crash, and the client's query ends
// meanwhile, so the kill time is taken before.
func (s *scenario) backendKilled(name string) error {
	c, err := s.client(name)
	if err != nil {
		return err
	}
	if c.backendPID == 0 {
		return fmt.Errorf("client %s has no known backend", name)
	}
	c.killedAt = time.Now()
	s.pg.KillBackend(s.t, c.backendPID)
	return nil
}

func (s *scenario) clientGetsErrorWithin(name, timeout string) error {
	c, err := s.client(name)
	if err != nil {
		return err
	}
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return err
	}
	if c.pending == nil || c.killedAt.IsZero() {
		return fmt.Errorf("client %s has no query running on a killed backend", name)
	}
	var res queryResult
	select {
	case res = <-c.pending:
	case <-time.After(time.Until(c.killedAt.Add(d + 5*time.Second))):
		return fmt.Errorf("client %s got no answer within %s of the kill", name, d+5*time.Second)
	}
	if res.err == nil {
		return fmt.Errorf("client %s: the query succeeded, want an error", name)
	}
	took := res.at.Sub(c.killedAt)
	s.t.Logf("client %s got %q %s after the kill", name, res.err, took.Round(time.Millisecond))
	if took > d {
		return fmt.Errorf("client %s got its error %s after the kill, want within %s: %w", name, took, d, res.err)
	}
	return nil
}
