// Package app assembles a complete pg_doorman from its parts: the daemon,
// the admin console and the Prometheus exporter. cmd/pg_doorman and the
// integration tests build the same thing through Build, so tests run
// exactly what operators run, minus the process boundary.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/admin"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/metrics"
	"github.com/doorman-go/doorman/internal/upgrade"
)

// App is one wired pg_doorman.
type App struct {
	Daemon  *daemon.Daemon
	Metrics *metrics.Metrics

	inherited *upgrade.Inherited // from the old process of a binary upgrade
	metricsLn net.Listener       // the /metrics listener, handed on by Upgrade
}

// Inherit makes Run use what the old process of a binary upgrade handed
// over (listeners, the migration channel) and tell it when ready. Call
// before Run.
func (a *App) Inherit(in *upgrade.Inherited) {
	a.inherited = in
	a.Daemon.Inherit(in)
}

// Upgrade hands over to a new process started by spawn, with the client
// and metrics listeners (daemon.Upgrade).
func (a *App) Upgrade(ctx context.Context, spawn daemon.Spawn) error {
	var extra []upgrade.Listener
	if l, ok := a.metricsLn.(*net.TCPListener); ok {
		extra = append(extra, upgrade.Listener{Kind: upgrade.KindMetrics, L: l})
	}
	return a.Daemon.Upgrade(ctx, extra, spawn)
}

// Build wires a pg_doorman for cfg. Nothing listens yet.
func Build(cfg *config.Config, log *zap.Logger, level zap.AtomicLevel) (*App, error) {
	var m *metrics.Metrics
	d, err := daemon.New(cfg, log, level, daemon.Parts{
		Metrics: func(d *daemon.Daemon) daemon.Metrics { m = metrics.New(d); return m },
		// Built after Metrics (daemon.Parts): m is set.
		Admin: func(d *daemon.Daemon) daemon.Admin { return admin.New(d, m) },
	})
	if err != nil {
		return nil, err
	}
	d.Pools.SetFallbackMetrics(fallback.NewMetrics(m.Registry()))
	return &App{Daemon: d, Metrics: m}, nil
}

// metricsListener is the inherited /metrics listener, or a new one.
func (a *App) metricsListener(ctx context.Context, addr string) (net.Listener, error) {
	if a.inherited != nil {
		if ln, ok := a.inherited.Listeners[upgrade.KindMetrics]; ok {
			return ln, nil
		}
	}
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}

// Run listens, serves until Shutdown, and serves /metrics when enabled.
// ready is called once the listeners are open.
func (a *App) Run(ctx context.Context, ready func()) error {
	if err := a.Daemon.Listen(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := a.Daemon.Config()
	if cfg.Prometheus.Enabled {
		addr := fmt.Sprintf("%s:%d", cfg.Prometheus.Host, cfg.Prometheus.Port)
		ln, err := a.metricsListener(ctx, addr)
		if err != nil {
			a.Daemon.Log.Error("prometheus endpoint failed", zap.String("addr", addr), zap.Error(err))
		} else {
			a.metricsLn = ln
			go func() {
				if err := a.Metrics.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
					a.Daemon.Log.Error("prometheus endpoint failed", zap.String("addr", addr), zap.Error(err))
				}
			}()
		}
	}
	if ready != nil {
		ready()
	}
	if err := a.inherited.Ready(); err != nil {
		a.Daemon.Log.Error("binary upgrade: the old process was not told we are ready", zap.Error(err))
	}
	return a.Daemon.Serve(ctx)
}
