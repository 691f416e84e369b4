package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/doorman-go/doorman/internal/drill"
)

// Exit codes of drill.
const (
	exitDrillClean     = 0 // reconciled, no violation
	exitDrillViolation = 1 // acknowledged missing, duplicates, unreconciled ...
	exitDrillError     = 2 // bad flags, table not created
)

func drillCommand(code *int) *cobra.Command {
	c := drill.Config{Backoff: drill.DefaultBackoff}
	var jsonPath string
	var events bool
	cmd := &cobra.Command{
		Use:   "drill --dsn DSN [flags]",
		Short: "write through DSN while you rehearse a failover, then reconcile (exit 0 clean, 1 violations, 2 error)",
		Long: `drill runs N workers that each open a fresh connection per attempt
(target_session_attrs=read-write), INSERT one unique token into a table of
its own and back off with jitter after failures. Afterwards it looks every
token up on the primary and prints the write gap, the first acknowledged
write on a new primary, the failure categories and the reconciliation.
It creates one table (doorman_drill_<random> unless --table) and drops it.`,
		Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			*code = runDrill(c, jsonPath, events)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.DSN, "dsn", os.Getenv("DRILL_DSN"), "libpq-style DSN or URL, may list several hosts (default $DRILL_DSN)")
	fl.IntVar(&c.Workers, "workers", 6, "parallel workers")
	fl.DurationVar(&c.Duration, "duration", 24*time.Second, "how long the workers write")
	fl.DurationVar(&c.Interval, "interval", 150*time.Millisecond, "pause after an acknowledged write")
	fl.DurationVar(&c.Backoff.Base, "backoff-base", drill.DefaultBackoff.Base, "d_0 of d_n = min(d_max, d_0*2^n)*J")
	fl.DurationVar(&c.Backoff.Max, "backoff-max", drill.DefaultBackoff.Max, "d_max")
	fl.Float64Var(&c.Backoff.JitterLow, "jitter-low", drill.DefaultBackoff.JitterLow, "lower bound of J")
	fl.Float64Var(&c.Backoff.JitterHigh, "jitter-high", drill.DefaultBackoff.JitterHigh, "upper bound of J")
	fl.DurationVar(&c.AttemptTimeout, "attempt-timeout", 3*time.Second, "bound of one connect + INSERT")
	fl.DurationVar(&c.ReconcileTimeout, "reconcile-timeout", time.Minute, "how long to look for the primary afterwards")
	fl.StringVar(&c.Validate, "validate", drill.ValidateLibpq, "read-write check: libpq (in_hot_standby/default_transaction_read_only reported at login, as libpq 14+) or show (SHOW transaction_read_only)")
	fl.StringVar(&c.Table, "table", "", "table to create and drop (must not exist)")
	fl.BoolVar(&c.KeepTable, "keep-table", false, "do not drop the table")
	fl.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file (- for stdout instead of the table)")
	fl.BoolVar(&events, "events", false, "include every attempt in the JSON report")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		*code = exitDrillError
		return err
	})
	return cmd
}

func runDrill(c drill.Config, jsonPath string, events bool) int {
	// Config treats zero as "default"; on the command line the defaults are
	// explicit, so a zero here is a mistake.
	if c.Workers < 1 || c.Duration <= 0 || c.Interval <= 0 {
		fmt.Fprintln(os.Stderr, "pgrole_check drill: error: --workers, --duration and --interval must be positive")
		return exitDrillError
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	r, err := drill.Run(ctx, c, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgrole_check drill: error:", oneLine(err))
		return exitDrillError
	}
	switch jsonPath {
	case "-":
		err = r.WriteJSON(os.Stdout, events)
	case "":
		err = r.WriteTable(os.Stdout)
	default:
		err = r.WriteTable(os.Stdout)
		if err == nil {
			err = writeJSONFile(jsonPath, r, events)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgrole_check drill: write report:", oneLine(err))
		return exitDrillError
	}
	if r.Reconciliation.Violations() > 0 {
		return exitDrillViolation
	}
	return exitDrillClean
}

func writeJSONFile(path string, r *drill.Report, events bool) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := r.WriteJSON(f, events); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
