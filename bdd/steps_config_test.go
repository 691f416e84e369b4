package bdd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cucumber/godog"
)

// commandResult is how a command run by a step ended.
type commandResult struct {
	line   string
	code   int
	output string // stdout and stderr together
}

// registerConfigSteps: pg_doorman run as a command, such as -t.
func (s *scenario) registerConfigSteps(sc *godog.ScenarioContext) {
	sc.Step(`^a configuration file "([^"]*)":$`, s.aConfigurationFile)
	sc.Step(`^I run "(pg_doorman(?: [^"]*)?)"$`, s.iRun)
	sc.Step(`^the exit code is (\d+)$`, s.theExitCodeIs)
	sc.Step(`^the output contains "([^"]*)"$`, s.theOutputContains)
}

func (s *scenario) aConfigurationFile(name string, body *godog.DocString) error {
	if name != filepath.Base(name) {
		return fmt.Errorf("file name %q: want a plain name", name)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body.Content+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// iRun runs pg_doorman with the given arguments in the scenario directory.
// Arguments are split on spaces; there is no shell.
func (s *scenario) iRun(line string) error {
	args := strings.Fields(line)[1:]
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, doormanBin, args...)
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	res := &commandResult{line: line, output: string(out)}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		res.code = exitErr.ExitCode()
	default:
		return fmt.Errorf("run %s: %w\n%s", line, err, out)
	}
	s.command = res
	s.t.Logf("%s: exit code %d, output:\n%s", line, res.code, res.output)
	return nil
}

func (s *scenario) theExitCodeIs(code int) error {
	if s.command == nil {
		return errors.New("no command was run in this scenario")
	}
	if s.command.code != code {
		return fmt.Errorf("%s exited with code %d, want %d; output:\n%s", s.command.line, s.command.code, code, s.command.output)
	}
	return nil
}

func (s *scenario) theOutputContains(text string) error {
	if s.command == nil {
		return errors.New("no command was run in this scenario")
	}
	if !strings.Contains(s.command.output, text) {
		return fmt.Errorf("output of %s does not contain %q:\n%s", s.command.line, text, s.command.output)
	}
	return nil
}
