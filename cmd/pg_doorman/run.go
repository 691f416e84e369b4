package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/app"
	"github.com/doorman-go/doorman/internal/config"
	pgdaemon "github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/logging"
)

type flags struct {
	test      bool
	logLevel  string
	logFormat string
	noColor   bool
	daemonize bool
	version   bool
}

func run(args []string) int {
	var f flags
	code := 0
	cmd := &cobra.Command{
		Use:           "pg_doorman [CONFIG_FILE]",
		Short:         "PostgreSQL connection pooler",
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code = start(f, args)
			return nil
		},
	}
	bindFlags(cmd.Flags(), &f, os.Getenv)
	addCommands(cmd)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "pg_doorman:", err)
		return 1
	}
	return code
}

func configPath(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	if p := os.Getenv("CONFIG_FILE"); p != "" {
		return p
	}
	return "pg_doorman.toml"
}

func start(f flags, args []string) int {
	if f.version {
		fmt.Println("pg_doorman", pgdaemon.Version)
		return 0
	}
	path := configPath(args)
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(os.Stderr, "pg_doorman: configuration file not found: %s\n", path)
		return 1
	}
	cfg, warnings, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pg_doorman: invalid configuration %s:\n%v\n", path, err)
		return 1
	}
	if f.test {
		for _, w := range warnings {
			fmt.Fprintln(os.Stderr, "warning:", w)
		}
		fmt.Printf("configuration %s is valid\n", path)
		return 0
	}
	if f.daemonize && os.Getenv(daemonEnv) == "" {
		return daemonizeSelf(cfg.General.DaemonPIDFile)
	}
	level := cfg.General.LogLevel
	if f.logLevel != "" {
		level = f.logLevel
	}
	log, atom, err := logging.New(logging.Options{Level: level, Format: f.logFormat, NoColor: f.noColor})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg_doorman:", err)
		return 1
	}
	defer log.Sync() //nolint:errcheck
	if path := os.Getenv("PG_DOORMAN_CPUPROFILE"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			log.Error("cpu profile", zap.Error(err))
		} else {
			defer stop()
		}
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	if f.logLevel != "" {
		if l, err := logging.ParseLevel(f.logLevel, zapcore.InfoLevel); err == nil {
			for _, n := range l.Notices {
				log.Warn("--log-level: " + n)
			}
		}
	}
	if f.daemonize && cfg.General.DaemonPIDFile != "" {
		// The parent wrote our PID there; whoever still finds the file
		// after we are gone would signal a stranger.
		defer removePIDFile(cfg.General.DaemonPIDFile, os.Getpid(), log)
	}
	if err := serve(cfg, log, atom); err != nil {
		log.Error("pg_doorman failed", zap.Error(err))
		return 1
	}
	return 0
}

func serve(cfg *config.Config, log *zap.Logger, atom zap.AtomicLevel) error {
	a, err := app.Build(cfg, log, atom)
	if err != nil {
		return err
	}
	d := a.Daemon
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	go func() {
		for s := range sig {
			switch s {
			case syscall.SIGHUP:
				_ = d.Reload()
			default:
				log.Info("got signal, shutting down gracefully", zap.Stringer("signal", s))
				d.Shutdown()
			}
		}
	}()
	err = a.Run(context.Background(), func() {
		log.Info("pg_doorman started", zap.String("version", pgdaemon.Version), zap.Stringer("addr", d.Addr()), zap.Int("pools", len(cfg.Pools)))
		_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)
	})
	log.Info("pg_doorman stopped")
	return err
}
