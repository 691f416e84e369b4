package bdd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cucumber/godog"
	"github.com/jackc/pgx/v5"
)

// loadTimeout bounds a whole load run.
const loadTimeout = 30 * time.Second

// loadResult is what a load run saw.
type loadResult struct {
	want      int
	succeeded int64
	errs      []error // the first few failures
	failures  int64
	maxConns  int // most client backends of the user seen at once
	samples   int // how many times PostgreSQL was asked
}

func (s *scenario) registerLoadSteps(sc *godog.ScenarioContext) {
	sc.Step(`^(\d+) clients each run (\d+) transactions on "([^"]*)" as "([^"]*)" with password "([^"]*)"$`, s.clientsRunTransactions)
	sc.Step(`^all (\d+) transactions succeed$`, s.allTransactionsSucceed)
	sc.Step(`^PostgreSQL showed at most (\d+) connections? of user "([^"]*)" during the run$`, s.atMostConnections)
}

func (s *scenario) clientsRunTransactions(clients, txs int, db, user, password string) error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	res := &loadResult{want: clients * txs}
	var mu sync.Mutex // guards res.errs
	record := func(n int, err error) {
		atomic.AddInt64(&res.failures, int64(n))
		mu.Lock()
		if len(res.errs) < 5 {
			res.errs = append(res.errs, err)
		}
		mu.Unlock()
	}
	sampler := s.startSampler(user)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, s.doorman.dsn(user, password, db))
			if err != nil {
				record(txs, fmt.Errorf("client %d: connect: %w", i, err))
				return
			}
			defer closeConn(conn)
			for j := range txs {
				if err := oneTransaction(ctx, conn, i, j); err != nil {
					record(1, fmt.Errorf("client %d transaction %d: %w", i, j, err))
					continue
				}
				atomic.AddInt64(&res.succeeded, 1)
			}
		})
	}
	wg.Wait()
	maxConns, samples, err := sampler.stop()
	if err != nil {
		return err
	}
	res.maxConns, res.samples = maxConns, samples
	s.load = res
	s.t.Logf("load: %d ok, %d failed, at most %d server connections in %d samples",
		res.succeeded, res.failures, res.maxConns, res.samples)
	return nil
}

// oneTransaction is what an application does: write, read, commit.
func oneTransaction(ctx context.Context, conn *pgx.Conn, client, n int) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO items (client, n) VALUES ($1, $2)", client, n); err != nil {
			return err
		}
		var got int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM items WHERE client = $1", client).Scan(&got); err != nil {
			return err
		}
		if got != n+1 {
			return fmt.Errorf("client sees %d of its rows, want %d", got, n+1)
		}
		return nil
	})
}

func (s *scenario) allTransactionsSucceed(want int) error {
	if s.load == nil {
		return errors.New("no load was run in this scenario")
	}
	if s.load.want != want {
		return fmt.Errorf("the run had %d transactions, not %d", s.load.want, want)
	}
	if s.load.succeeded != int64(want) {
		return fmt.Errorf("%d of %d transactions succeeded; first errors: %w",
			s.load.succeeded, want, errors.Join(s.load.errs...))
	}
	return nil
}

func (s *scenario) atMostConnections(most int, user string) error {
	if s.load == nil {
		return errors.New("no load was run in this scenario")
	}
	if s.load.maxConns < 1 {
		return fmt.Errorf("PostgreSQL never showed a connection of %s in %d samples: the run did not reach it", user, s.load.samples)
	}
	if s.load.maxConns > most {
		return fmt.Errorf("PostgreSQL showed %d connections of %s at once, want at most %d", s.load.maxConns, user, most)
	}
	now, err := s.connectionsOf(user)
	if err != nil {
		return err
	}
	if now > most {
		return fmt.Errorf("PostgreSQL has %d connections of %s after the run, want at most %d", now, user, most)
	}
	return nil
}

// sampler counts a user's backends in pg_stat_activity, as often as it
// can, until stopped.
type sampler struct {
	stopCh chan struct{}
	done   chan struct{}
	max    int
	n      int
	err    error
}

func (s *scenario) startSampler(user string) *sampler {
	sm := &sampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	go sm.run(s.pg.SuperDSN("postgres"), user)
	return sm
}

func (sm *sampler) run(dsn, user string) {
	defer close(sm.done)
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		sm.err = fmt.Errorf("sampler: %w", err)
		return
	}
	defer closeConn(conn)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND usename = $1`, user).Scan(&n)
		if err != nil {
			sm.err = fmt.Errorf("sampler: %w", err)
			return
		}
		sm.n++
		sm.max = max(sm.max, n)
		select {
		case <-sm.stopCh:
			return
		default:
		}
	}
}

// stop ends sampling after one more sample and returns the results.
func (sm *sampler) stop() (maxConns, samples int, err error) {
	close(sm.stopCh)
	<-sm.done
	return sm.max, sm.n, sm.err
}
