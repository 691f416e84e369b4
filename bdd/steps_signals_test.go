package bdd

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/cucumber/godog"
)

// registerSignalSteps: reload and shutdown of a running pg_doorman.
func (s *scenario) registerSignalSteps(sc *godog.ScenarioContext) {
	sc.Step(`^pg_doorman receives (SIGHUP|SIGTERM|SIGINT)$`, s.doormanReceives)
	sc.Step(`^pool "([^"]*)" for user "([^"]*)" with pool_size (\d+) is added to the configuration file$`, s.poolAdded)
	sc.Step(`^the configuration file gets the unknown key "([^"]*)"$`, s.unknownKeyAdded)
	sc.Step(`^pg_doorman exits with code (\d+) within (\S+) of the (signal|last commit)$`, s.doormanExitsWithin)
	sc.Step(`^pg_doorman is still running$`, s.doormanStillRunning)
	sc.Step(`^within (\S+) the pg_doorman log mentions "([^"]*)"$`, s.logMentionsWithin)
}

var signals = map[string]syscall.Signal{"SIGHUP": syscall.SIGHUP, "SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT}

func (s *scenario) doormanReceives(name string) error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	return s.doorman.signal(signals[name])
}

func (s *scenario) poolAdded(db, user string, poolSize int) error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	verifier, ok := s.users[user]
	if !ok {
		return fmt.Errorf("user %q was not created on PostgreSQL in this scenario", user)
	}
	s.config.addPool(db, "transaction", userConfig{Name: user, Verifier: verifier, PoolSize: poolSize})
	return s.doorman.writeConfig(s.config)
}

func (s *scenario) unknownKeyAdded(key string) error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	if !strings.HasPrefix(key, "general.") || strings.Count(key, ".") != 1 {
		return fmt.Errorf("key %q: this step adds general.<name> keys only", key)
	}
	cfg := s.config
	cfg.Extra = strings.TrimPrefix(key, "general.") + ": 1"
	return s.doorman.writeConfig(cfg)
}

func (s *scenario) doormanExitsWithin(code int, timeout, since string) error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return err
	}
	from := map[string]time.Time{"signal": s.doorman.signaledAt, "last commit": s.lastCommitAt}[since]
	if from.IsZero() {
		return fmt.Errorf("there was no %s in this scenario", since)
	}
	select {
	case <-s.doorman.done:
	case <-time.After(time.Until(from.Add(d))):
		return fmt.Errorf("pg_doorman still running %s after the %s", d, since)
	}
	took := s.doorman.exitedAt.Sub(from)
	s.t.Logf("pg_doorman exited with code %d %s after the %s", s.doorman.exitCode, took.Round(time.Millisecond), since)
	if took > d {
		return fmt.Errorf("pg_doorman exited %s after the %s, want within %s", took, since, d)
	}
	if s.doorman.exitCode != code {
		return fmt.Errorf("pg_doorman exited with code %d, want %d", s.doorman.exitCode, code)
	}
	return nil
}

func (s *scenario) doormanStillRunning() error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	if !s.doorman.running() {
		return fmt.Errorf("pg_doorman exited with code %d", s.doorman.exitCode)
	}
	return nil
}

func (s *scenario) logMentionsWithin(timeout, text string) error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	d, err := time.ParseDuration(timeout)
	if err != nil {
		return err
	}
	return poll(d, fmt.Sprintf("pg_doorman log mentions %q", text), func() (bool, error) {
		return strings.Contains(s.doorman.log(), text), nil
	})
}
