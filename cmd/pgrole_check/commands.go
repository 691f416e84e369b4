package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/logging"
	"github.com/doorman-go/doorman/internal/rolecheck"
)

// Exit codes of check.
const (
	exitMatch   = 0
	exitNoMatch = 1
	exitError   = 2
)

func checkCommand(code *int) *cobra.Command {
	var f rolecheck.ConnFlags
	var verbose bool
	cmd := &cobra.Command{
		Use:   "check [flags] [proxy_addr proxy_port server_addr server_port]",
		Short: "check one server's role once (exit 0 match, 1 no match, 2 error)",
		Args:  cobra.ArbitraryArgs,
		Run: func(cmd *cobra.Command, args []string) {
			*code = runCheck(&f, args, verbose)
		},
	}
	f.Register(cmd.Flags(), true)
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print the reason on stdout when the role matches")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		*code = exitError
		return err
	})
	return cmd
}

func runCheck(f *rolecheck.ConnFlags, args []string, verbose bool) int {
	o, err := f.Resolve(args, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgrole_check: error:", oneLine(err))
		return exitError
	}
	v, _, err := rolecheck.Check(context.Background(), o)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "pgrole_check: error:", oneLine(err))
		return exitError
	case !v.Match:
		fmt.Fprintln(os.Stderr, "pgrole_check:", v.Reason)
		return exitNoMatch
	}
	if verbose {
		fmt.Println("pgrole_check:", v.Reason)
	}
	return exitMatch
}

// oneLine keeps the reason on one line (errors.Join separates with newlines).
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

func serveCommand(code *int) *cobra.Command {
	var f rolecheck.ConnFlags
	var listen, logLevel, logFormat string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "serve Patroni-shaped health endpoints for HAProxy httpchk from direct checks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, _, err := logging.New(logging.Options{Level: logLevel, Format: logFormat})
			if err != nil {
				*code = exitError
				return err
			}
			defer func() { _ = log.Sync() }()
			o, err := f.Resolve(nil, func(k string) string {
				if strings.HasPrefix(k, "HAPROXY_") {
					return ""
				}
				return os.Getenv(k)
			})
			if err != nil {
				*code = exitError
				return err
			}
			*code = runServe(log, o, listen, interval)
			return nil
		},
	}
	f.Register(cmd.Flags(), false)
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8010", "HTTP listen address")
	cmd.Flags().DurationVar(&interval, "cache-interval", rolecheck.DefaultCacheInterval, "reuse one probe result for this long")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text, structured")
	return cmd
}

func runServe(log *zap.Logger, o rolecheck.Options, listen string, interval time.Duration) int {
	sc, err := rolecheck.NewSidecar(rolecheck.SidecarConfig{Options: o, CacheInterval: interval, Logger: log})
	if err != nil {
		log.Error("sidecar", zap.Error(err))
		return exitError
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.Error("listen", zap.Error(err))
		return exitError
	}
	srv := &http.Server{Handler: sc.Handler(), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", zap.String("listen", ln.Addr().String()), zap.String("server", o.Addr()),
		zap.String("user", o.User), zap.String("method", string(o.Method)), zap.Duration("cache_interval", interval))
	select {
	case err := <-errc:
		log.Error("serve", zap.Error(err))
		return exitError
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", zap.Error(err))
	}
	log.Info("stopped")
	return exitMatch
}
