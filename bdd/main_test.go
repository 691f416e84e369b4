package bdd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/colors"
)

// doormanBin is the pg_doorman binary every scenario runs; set by TestMain.
var doormanBin string

// godogOpts are the suite's options. Scenarios tagged @wip describe
// behaviour pg_doorman does not have yet and are left out unless
// $GODOG_TAGS says otherwise (for example GODOG_TAGS=@wip, or @pooler).
var godogOpts = godog.Options{
	Format: "pretty",
	Paths:  []string{"features"},
	Strict: true,
	Output: colors.Uncolored(os.Stdout),
	Tags:   "~@wip",
}

func TestMain(m *testing.M) {
	flag.Parse()
	bin, cleanup, err := buildDoorman()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bdd:", err)
		os.Exit(1)
	}
	doormanBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// buildDoorman returns $DOORMAN_BIN, or builds cmd/pg_doorman of the
// working tree into a temporary directory.
func buildDoorman() (string, func(), error) {
	if bin := os.Getenv("DOORMAN_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", nil, fmt.Errorf("DOORMAN_BIN: %w", err)
		}
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "bdd-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("create build dir: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "pg_doorman")
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./cmd/pg_doorman")
	cmd.Dir = ".." // the root module, whose go.mod and go.sum cover the binary
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build pg_doorman (or set DOORMAN_BIN): %w\n%s", err, out)
	}
	return bin, cleanup, nil
}

// TestFeatures runs every scenario of features/ as a subtest.
func TestFeatures(t *testing.T) {
	opts := godogOpts
	opts.TestingT = t
	if tags, ok := os.LookupEnv("GODOG_TAGS"); ok {
		opts.Tags = tags
	}
	env := &suiteEnv{}
	t.Cleanup(env.close)
	suite := godog.TestSuite{
		Name:                "pg_doorman",
		ScenarioInitializer: func(sc *godog.ScenarioContext) { initScenario(t, env, sc) },
		Options:             &opts,
	}
	if code := suite.Run(); code != 0 {
		t.Fatalf("godog exit status %d", code)
	}
}
