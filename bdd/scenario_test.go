package bdd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/jackc/pgx/v5"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// stepTimeout bounds one network operation of a step.
const stepTimeout = 10 * time.Second

// scenario is the state of one running scenario. godog runs scenarios one
// at a time and the steps of one scenario in order, so only the
// goroutines a step starts itself need locks.
type scenario struct {
	env *suiteEnv
	t   *scenarioT
	dir string // per-scenario directory: configs, logs, unix socket

	pg    *pgtest.Cluster   // the suite's server, once a step asked for it
	users map[string]string // PostgreSQL user → verifier from pg_authid

	doorman *doorman
	config  doormanConfig

	clients      map[string]*client
	lastCommitAt time.Time // when a client's commit last succeeded

	load    *loadResult
	command *commandResult
	result  []map[string]string // rows of the last admin console command
	columns []string            // its column names, in order
}

// initScenario wires the hooks and steps of one scenario.
func initScenario(suite *testing.T, env *suiteEnv, sc *godog.ScenarioContext) {
	s := &scenario{env: env, users: map[string]string{}, clients: map[string]*client{}}
	sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
		logf := func(format string, args ...any) { godog.Logf(ctx, format, args...) }
		if dt := godog.T(ctx); dt != nil {
			logf = dt.Logf
		}
		s.t = newScenarioT(suite, ctx, p.Name, logf)
		dir, err := os.MkdirTemp("", "bdd-")
		if err != nil {
			return ctx, fmt.Errorf("create scenario dir: %w", err)
		}
		s.dir = dir
		s.t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return ctx, nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if err != nil {
			s.t.Fail() // lets pgtest print the server log tail
			if s.doorman != nil {
				s.t.Logf("pg_doorman log:\n%s", s.doorman.logTail(80))
			}
			if s.pg != nil {
				s.t.Logf("PostgreSQL log:\n%s", tail(s.pg.ReadLog(s.t), 40))
			}
		}
		return ctx, s.t.runCleanups()
	})
	s.registerPostgresSteps(sc)
	s.registerPoolerSteps(sc)
	s.registerSignalSteps(sc)
	s.registerConfigSteps(sc)
	s.registerAdminSteps(sc)
}

// tail returns the last n lines of a log.
func tail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// needPG fails the step when the scenario has no PostgreSQL yet.
func (s *scenario) needPG() error {
	if s.pg == nil {
		return fmt.Errorf("the scenario has no PostgreSQL server: add \"Given a PostgreSQL server\"")
	}
	return nil
}

// needDoorman fails the step when pg_doorman was not started.
func (s *scenario) needDoorman() error {
	if s.doorman == nil {
		return fmt.Errorf("pg_doorman is not running in this scenario")
	}
	return nil
}

// superQuery runs one query as the PostgreSQL superuser over the unix
// socket and scans its single row into dest.
func (s *scenario) superQuery(db, sql string, args []any, dest ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.pg.SuperDSN(db))
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL as superuser: %w", err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		return fmt.Errorf("query %q: %w", sql, err)
	}
	return nil
}

// poll calls check every 10 ms until it reports done, returns an error,
// or timeout passes.
func poll(timeout time.Duration, what string, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := check()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
