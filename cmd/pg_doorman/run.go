package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/app"
	"github.com/doorman-go/doorman/internal/config"
	pgdaemon "github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/logging"
	"github.com/doorman-go/doorman/internal/procs"
	"github.com/doorman-go/doorman/internal/upgrade"
)

type flags struct {
	test      bool
	logLevel  string
	logFormat string
	noColor   bool
	daemonize bool
	version   bool
	inherit   []string // --inherit-fd kind=N: a binary upgrade's new process
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
	cmd.Flags().StringArrayVar(&f.inherit, upgrade.InheritFlag, nil, "internal: a descriptor handed over by a binary upgrade (kind=fd)")
	_ = cmd.Flags().MarkHidden(upgrade.InheritFlag)
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
	inherited, err := upgrade.FromFlags(f.inherit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg_doorman:", err)
		return 1
	}
	if f.daemonize && os.Getenv(daemonEnv) == "" && inherited == nil {
		return daemonizeSelf(cfg.General.DaemonPIDFile)
	}
	if f.daemonize && inherited != nil && cfg.General.DaemonPIDFile != "" {
		// The new process of an upgrade in daemon mode: the pid file is ours now.
		if err := os.WriteFile(cfg.General.DaemonPIDFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "pg_doorman: write pid file:", err)
		}
	}
	level := cfg.General.LogLevel
	if f.logLevel != "" {
		level = f.logLevel
	}
	var syslogCounts *logging.SyslogCounts // lines syslog did not take, for /metrics
	if cfg.General.SyslogProgName != "" {
		syslogCounts = new(logging.SyslogCounts)
	}
	log, atom, err := logging.New(logging.Options{Level: level, Format: f.logFormat, NoColor: f.noColor,
		Syslog: cfg.General.SyslogProgName, SyslogCounts: syslogCounts})
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
	if err := serve(cfg, log, atom, syslogCounts, inherited, upgradeSpec{path: path, daemon: f.daemonize, log: log}); err != nil {
		log.Error("pg_doorman failed", zap.Error(err))
		return 1
	}
	return 0
}

// upgradeSpec is what a binary upgrade needs to start the new process.
type upgradeSpec struct {
	path   string // the config file
	daemon bool   // -d: clients are drained, not migrated
	log    *zap.Logger
}

// spawn starts this binary again with our own arguments (minus the
// descriptors an earlier upgrade handed us) and the listeners.
func (u upgradeSpec) spawn(ctx context.Context, lns []upgrade.Listener) (*upgrade.Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var args []string
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "--"+upgrade.InheritFlag) {
			args = append(args, a)
		}
	}
	return upgrade.Spawn(ctx, upgrade.SpawnOptions{Binary: exe, ConfigPath: u.path, Args: args, Listeners: lns, Migrate: !u.daemon, Log: u.log})
}

// sigintUpgrades reports whether SIGINT starts a binary upgrade (the
// seed's legacy path: under -d or when stdin is not a terminal) rather
// than a shutdown (Ctrl+C on a terminal). PG_DOORMAN_CI_SHUTDOWN_ONLY=1
// makes it always a shutdown, as the seed documents.
func sigintUpgrades(daemonized bool) bool {
	if os.Getenv("PG_DOORMAN_CI_SHUTDOWN_ONLY") == "1" {
		return false
	}
	if daemonized {
		return true
	}
	_, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), ioctlGetTermios)
	return err != nil
}

// serve runs pg_doorman; syslogCounts are the syslog logger's (nil: it
// logs to stderr).
func serve(cfg *config.Config, log *zap.Logger, atom zap.AtomicLevel, syslogCounts *logging.SyslogCounts,
	inherited *upgrade.Inherited, up upgradeSpec) error {
	a, err := app.Build(cfg, log, atom)
	if err != nil {
		return err
	}
	if syslogCounts != nil {
		a.Metrics.RegisterSyslog(syslogCounts)
	}
	if inherited != nil {
		a.Inherit(inherited)
	}
	d := a.Daemon
	// One P while one is enough (internal/procs), unless GOMAXPROCS is set.
	procsCtx, stopProcs := context.WithCancel(context.Background())
	procsDone := make(chan struct{})
	go func() {
		defer close(procsDone)
		if procs.Enabled() {
			procs.Run(procsCtx, procs.Options{Log: log})
		}
	}()
	defer func() { stopProcs(); <-procsDone }()
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR2)
	defer signal.Stop(sig)
	doUpgrade := func() {
		err := a.Upgrade(context.Background(), up.spawn)
		switch {
		case err == nil:
			_, _ = daemon.SdNotify(false, "STATUS=handing clients over to the new process")
		case errors.Is(err, pgdaemon.ErrUpgradeInProgress):
			log.Warn("binary upgrade already in progress: this request is ignored")
		}
	}
	go func() {
		for {
			select {
			case s := <-sig:
				switch {
				case s == syscall.SIGHUP:
					_ = d.Reload()
				case s == syscall.SIGUSR2, s == syscall.SIGINT && sigintUpgrades(up.daemon):
					// The seed's words, which its monitoring section lists.
					log.Info(fmt.Sprintf("Got %s, starting binary upgrade and graceful shutdown", signalName(s)))
					go doUpgrade()
				default:
					log.Info("got signal, shutting down gracefully", zap.Stringer("signal", s))
					_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
					d.Shutdown()
				}
			case <-d.Upgrades():
				go doUpgrade()
			}
		}
	}()
	err = a.Run(context.Background(), func() {
		log.Info("pg_doorman started", zap.String("version", pgdaemon.Version), zap.Stringer("addr", d.Addr()), zap.Int("pools", len(cfg.Pools)))
		state := daemon.SdNotifyReady
		if inherited != nil {
			// The unit's main process is us now (NotifyAccess=all).
			state = fmt.Sprintf("MAINPID=%d\n%s", os.Getpid(), daemon.SdNotifyReady)
		}
		_, _ = daemon.SdNotify(false, state)
	})
	log.Info("pg_doorman stopped")
	return err
}

// signalName is a signal as the seed's log lines name it ("SIGUSR2").
func signalName(s os.Signal) string {
	if ss, ok := s.(syscall.Signal); ok {
		if n := unix.SignalName(ss); n != "" {
			return n
		}
	}
	return s.String()
}
