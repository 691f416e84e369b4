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

	"github.com/doorman-go/doorman/internal/logging"
	"github.com/doorman-go/doorman/internal/proxy"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

type flags struct {
	test      bool
	logLevel  string
	logFormat string
	noColor   bool
}

// run parses args and runs the proxy; started, when not nil, receives the
// proxy once it serves (tests).
func run(args []string, started chan<- *proxy.Proxy) int {
	var f flags
	code := 0
	cmd := &cobra.Command{
		Use:           "patroni_proxy CONFIG_FILE",
		Short:         "Role-aware TCP proxy for Patroni clusters",
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(_ *cobra.Command, args []string) error {
			code = start(f, args[0], started)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.test, "test-config", "t", false, "validate the config file and exit (0 valid, 1 invalid)")
	fl.StringVarP(&f.logLevel, "log-level", "l", "info", "log level: debug, info, warn, error")
	fl.StringVarP(&f.logFormat, "log-format", "F", "text", "log format: text or structured")
	fl.BoolVarP(&f.noColor, "no-color", "n", false, "no colours in text logs")
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "patroni_proxy:", err)
		return 1
	}
	return code
}

func start(f flags, path string, started chan<- *proxy.Proxy) int {
	cfg, err := proxyconfig.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "patroni_proxy:", err)
		return 1
	}
	if f.test {
		fmt.Println("patroni_proxy: config is valid")
		return 0
	}
	log, _, err := logging.New(logging.Options{Level: f.logLevel, Format: f.logFormat, NoColor: f.noColor})
	if err != nil {
		fmt.Fprintln(os.Stderr, "patroni_proxy:", err)
		return 1
	}
	defer func() { _ = log.Sync() }()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	p := proxy.New(cfg, proxy.Options{Logger: log})
	if err := p.Start(); err != nil {
		log.Error("start failed", zap.Error(err))
		return 1
	}
	log.Info("patroni_proxy started", zap.String("config", path), zap.Stringer("api", p.APIAddr()))
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)
	if started != nil {
		started <- p
	}
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			if n := reload(log, p, path); n != nil {
				cfg = n
			}
			continue
		}
		return shutdown(log, p, cfg, sigs)
	}
	return 0
}

// reload returns the new config, or nil when the old one stays.
func reload(log *zap.Logger, p *proxy.Proxy, path string) *proxyconfig.Config {
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReloading)
	defer func() { _, _ = daemon.SdNotify(false, daemon.SdNotifyReady) }()
	cfg, err := proxyconfig.Load(path)
	if err != nil {
		p.ReloadFailed()
	} else {
		err = p.Reload(cfg)
	}
	if err != nil {
		log.Error("reload failed, the previous configuration stays in force", zap.Error(err))
		return nil
	}
	log.Info("configuration reloaded", zap.String("config", path))
	return cfg
}

func shutdown(log *zap.Logger, p *proxy.Proxy, cfg *proxyconfig.Config, sigs <-chan os.Signal) int {
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	log.Info("shutting down: no new connections; waiting for open ones", zap.Duration("shutdown_timeout", cfg.ShutdownTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	for {
		select {
		case err := <-done:
			if err != nil {
				log.Warn("shutdown timeout reached: remaining connections were closed")
			}
			log.Info("patroni_proxy stopped")
			return 0
		case sig := <-sigs:
			if sig != syscall.SIGHUP {
				log.Warn("second signal: exiting at once", zap.Stringer("signal", sig))
				return 1
			}
		}
	}
}
