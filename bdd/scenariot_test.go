package bdd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
)

// errSkipped is what SkipNow panics with.
var errSkipped = errors.New("scenario skipped")

// scenarioT is the testing.TB of one scenario, handed to the pgtest
// harness, whose helpers want one. A godog step does not run as a test
// function of its own, so a failure panics with an error, which godog
// turns into a failed step, and cleanups run in the After hook, newest
// first.
//
// The embedded TB is the suite's *testing.T and is there only for the
// interface's unexported method: every method the harness calls is
// overridden here, so the suite's test is never failed from a step.
type scenarioT struct {
	testing.TB
	ctx  context.Context
	name string
	logf func(format string, args ...any)

	mu       sync.Mutex // guards the fields below
	cleanups []func()
	failed   bool
	skipped  bool
}

func newScenarioT(suite testing.TB, ctx context.Context, name string, logf func(string, ...any)) *scenarioT {
	return &scenarioT{TB: suite, ctx: ctx, name: name, logf: logf}
}

func (s *scenarioT) Helper()                           {}
func (s *scenarioT) Name() string                      { return s.name }
func (s *scenarioT) Context() context.Context          { return s.ctx }
func (s *scenarioT) Output() io.Writer                 { return logWriter{s} }
func (s *scenarioT) Attr(key, value string)            { s.Logf("attr %s=%s", key, value) }
func (s *scenarioT) Log(args ...any)                   { s.logf("%s", fmt.Sprint(args...)) }
func (s *scenarioT) Logf(format string, args ...any)   { s.logf(format, args...) }
func (s *scenarioT) Error(args ...any)                 { s.Log(args...); s.Fail() }
func (s *scenarioT) Errorf(format string, args ...any) { s.Logf(format, args...); s.Fail() }
func (s *scenarioT) Fatal(args ...any)                 { s.fail(fmt.Sprint(args...)) }
func (s *scenarioT) Fatalf(format string, args ...any) { s.fail(fmt.Sprintf(format, args...)) }
func (s *scenarioT) FailNow()                          { s.fail("FailNow called") }
func (s *scenarioT) Skip(args ...any)                  { s.Log(args...); s.SkipNow() }
func (s *scenarioT) Skipf(format string, args ...any)  { s.Logf(format, args...); s.SkipNow() }
func (s *scenarioT) Setenv(key, value string)          { s.fail("Setenv: not supported in a scenario") }
func (s *scenarioT) Chdir(dir string)                  { s.fail("Chdir: not supported in a scenario") }
func (s *scenarioT) TempDir() string                   { s.fail("TempDir: use the scenario directory"); return "" }
func (s *scenarioT) ArtifactDir() string               { s.fail("ArtifactDir: not supported"); return "" }
func (s *scenarioT) Cleanup(f func())                  { s.mu.Lock(); s.cleanups = append(s.cleanups, f); s.mu.Unlock() }
func (s *scenarioT) Fail()                             { s.mu.Lock(); s.failed = true; s.mu.Unlock() }
func (s *scenarioT) Failed() bool                      { s.mu.Lock(); defer s.mu.Unlock(); return s.failed }
func (s *scenarioT) Skipped() bool                     { s.mu.Lock(); defer s.mu.Unlock(); return s.skipped }
func (s *scenarioT) SkipNow()                          { s.mu.Lock(); s.skipped = true; s.mu.Unlock(); panic(errSkipped) }

// fail marks the scenario failed and ends the step: godog recovers the
// panic and reports the message as the step's error.
func (s *scenarioT) fail(msg string) {
	s.Fail()
	panic(errors.New(msg))
}

// runCleanups runs the registered cleanups newest first; a cleanup that
// fails (panics) does not stop the others. It returns their errors.
func (s *scenarioT) runCleanups() error {
	var errs []error
	for {
		s.mu.Lock()
		n := len(s.cleanups)
		if n == 0 {
			s.mu.Unlock()
			return errors.Join(errs...)
		}
		f := s.cleanups[n-1]
		s.cleanups = s.cleanups[:n-1]
		s.mu.Unlock()
		if err := runRecovering(f); err != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", err))
		}
	}
}

// runRecovering runs f and turns a panic into an error.
func runRecovering(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// logWriter sends writes to the scenario log.
type logWriter struct{ s *scenarioT }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.Logf("%s", p)
	return len(p), nil
}
