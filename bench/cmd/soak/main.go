// Command soak is the pg_doorman soak test behind `make soak`: many pgx
// clients in this process run a mixed workload (pgbench -S and tpcb-like,
// prepared statements, COPY in and out, 10 MB results, clients killed at
// random) through one pg_doorman in front of a throwaway PostgreSQL, while
// the pooler's RSS, heap and goroutines are sampled every minute.
//
// Config: SOAK_* environment variables (bench/soak/settings.go):
// SOAK_DURATION (30m), SOAK_CLIENTS (400), SOAK_POOL_SIZE (40),
// SOAK_INTERVAL (1m), SOAK_WARMUP (derived), SOAK_SCALE (10),
// SOAK_RSS_TOLERANCE (0.05), SOAK_RSS_SLACK (4, MiB), SOAK_OUT (a file for
// the Markdown table; the table is always printed). Signals: SIGINT and
// SIGTERM end the load early; the table is printed and the run fails as
// interrupted; child processes die with it. Exit codes: 0 when the verdict
// passes, 1 when it fails or the run could not complete, 2 on bad flags or
// settings.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/doorman-go/doorman/bench/soak"
)

func main() {
	os.Exit(run())
}

func run() int {
	s := soak.DefaultSettings()
	flag.StringVar(&s.DoormanBin, "doorman", s.DoormanBin, "pg_doorman binary")
	flag.StringVar(&s.RepoDir, "repo", s.RepoDir, "repository, for the git commit")
	flag.Parse()
	s, err := s.ApplyEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "soak: %d clients, pool_size %d, %s, warm-up %s\n", s.Clients, s.PoolSize, s.Duration, s.WarmupTime())
	rep, runErr := soak.Run(ctx, s, os.Stderr)
	if len(rep.Samples) == 0 {
		fmt.Fprintln(os.Stderr, "soak:", runErr)
		return 1
	}
	table := soak.Render(rep)
	fmt.Print(table)
	if s.Out != "" {
		if err := os.WriteFile(s.Out, []byte(table), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "soak: write table:", err)
			return 1
		}
	}
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "soak:", runErr)
		return 1
	}
	if !rep.Verdict.Pass {
		return 1
	}
	return 0
}
