// Command benchrun is the benchmark behind `make bench`: pgbench against
// PostgreSQL directly, through PgBouncer and through pg_doorman, and the
// memory per idle client of both poolers. It writes a Markdown report.
//
// Config: BENCH_* environment variables (see bench/harness/settings.go) and
// the flags below; -json also saves the raw results, and -render rewrites
// the report from such a file without running anything. The TLS section
// goes to its own file (-tls-out); with BENCH_ONLY=tls only that section
// runs and only that file is written, so the main report keeps its figures;
// BENCH_ONLY=idle, BENCH_ONLY=floor and BENCH_ONLY=paused print their
// section and write no file. `benchrun forward -target ADDR -mode M` is not
// the benchmark but one bare forwarder of bench/floor, which the floor
// section starts as a child.
// Signals: SIGINT and SIGTERM stop the run; child processes die with it.
// Exit codes: 0 when the report was written, 1 on any error, 2 on bad flags
// or settings.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/doorman-go/doorman/bench/floor"
	"github.com/doorman-go/doorman/bench/harness"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == harness.ForwarderSubcommand {
		os.Exit(forward(os.Args[2:]))
	}
	os.Exit(run())
}

// forward is `benchrun forward`: one bare forwarder of bench/floor, until
// SIGINT or SIGTERM (the floor section of the benchmark starts it).
func forward(args []string) int {
	fs := flag.NewFlagSet("benchrun forward", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to accept clients on")
	target := fs.String("target", "", "address to forward each client to")
	mode := fs.String("mode", string(floor.ModeGoroutines), "goroutines, epoll-thread, epoll-netpoller, txpool or io-uring")
	loops := fs.Int("loops", 1, "event loops of the epoll modes")
	pool := fs.Int("pool", 40, "server connections txpool keeps")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	m, err := floor.ParseMode(*mode)
	if err != nil || *target == "" || *loops < 1 || *pool < 1 {
		fmt.Fprintln(os.Stderr, "benchrun forward: want -target, a known -mode, -loops >= 1 and -pool >= 1:", err)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun forward:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := floor.Serve(ctx, ln, *target, floor.Config{Mode: m, Loops: *loops, PoolSize: *pool}); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun forward:", err)
		return 1
	}
	return 0
}

func run() int {
	s := harness.DefaultSettings()
	flag.StringVar(&s.DoormanBin, "doorman", s.DoormanBin, "pg_doorman binary")
	flag.StringVar(&s.PgBouncerBin, "pgbouncer", s.PgBouncerBin, "pgbouncer binary")
	flag.StringVar(&s.Out, "out", s.Out, "report file")
	tlsOut := flag.String("tls-out", "docs/benchmarks-tls.md", "report file of the TLS section")
	flag.StringVar(&s.RepoDir, "repo", s.RepoDir, "repository, for the git commit")
	jsonOut := flag.String("json", "", "also save the raw results to this file")
	renderFrom := flag.String("render", "", "only rewrite the report from raw results saved by -json")
	flag.Parse()
	s, err := s.ApplyEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 2
	}
	var rep harness.Report
	if *renderFrom != "" {
		rep, err = load(*renderFrom)
	} else {
		rep, err = measure(s, *jsonOut)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 1
	}
	var files [][2]string // path, contents
	if len(rep.Matrix) > 0 {
		files = append(files, [2]string{s.Out, harness.Render(rep) + harness.KeptTail(s.Out)})
	}
	if len(rep.TLS.Cases)+len(rep.TLS.Connect) > 0 {
		files = append(files, [2]string{*tlsOut, harness.RenderTLS(rep) + harness.KeptTail(*tlsOut)})
	}
	if len(files) == 0 && s.Only == harness.OnlyIdle && len(rep.Idle) > 0 {
		return 0 // BENCH_ONLY=idle: the progress lines are the result
	}
	if len(files) == 0 && s.Only == harness.OnlyFloor && len(rep.Floor.Cases) > 0 {
		return 0 // BENCH_ONLY=floor: the table was printed
	}
	if len(files) == 0 && s.Only == harness.OnlyPaused && len(rep.Paused) > 0 {
		return 0 // BENCH_ONLY=paused: the table was printed
	}
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "benchrun: the results hold nothing to report")
		return 1
	}
	for _, f := range files {
		if err := os.WriteFile(f[0], []byte(f[1]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchrun: write report:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "benchrun: wrote %s (the run took %s)\n", f[0], rep.Elapsed)
	}
	return 0
}

func measure(s harness.Settings, jsonOut string) (harness.Report, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := harness.Run(ctx, s, os.Stderr)
	if err != nil || jsonOut == "" {
		return rep, err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return rep, fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
		return rep, fmt.Errorf("save results: %w", err)
	}
	return rep, nil
}

func load(path string) (harness.Report, error) {
	var rep harness.Report
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("read results: %w", err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("decode results %s: %w", path, err)
	}
	return rep, nil
}
