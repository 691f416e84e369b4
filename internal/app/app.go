// Package app assembles a complete pg_doorman from its parts: the daemon,
// the admin console and the Prometheus exporter. cmd/pg_doorman and the
// integration tests build the same thing through Build, so tests run
// exactly what operators run, minus the process boundary.
package app

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/admin"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/metrics"
)

// App is one wired pg_doorman.
type App struct {
	Daemon  *daemon.Daemon
	Metrics *metrics.Metrics
}

// Build wires a pg_doorman for cfg. Nothing listens yet.
func Build(cfg *config.Config, log *zap.Logger, level zap.AtomicLevel) (*App, error) {
	d, err := daemon.New(cfg, log, level)
	if err != nil {
		return nil, err
	}
	m := metrics.New(d)
	d.Pools.SetFallbackMetrics(fallback.NewMetrics(m.Registry()))
	d.Hooks.Admin = admin.New(d).Serve
	d.Hooks.Metrics = m
	d.Hooks.Rejected = m.Rejected
	return &App{Daemon: d, Metrics: m}, nil
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
		go func() {
			if err := a.Metrics.ListenAndServe(ctx, addr); err != nil && !errors.Is(err, context.Canceled) {
				a.Daemon.Log.Error("prometheus endpoint failed", zap.String("addr", addr), zap.Error(err))
			}
		}()
	}
	if ready != nil {
		ready()
	}
	return a.Daemon.Serve(ctx)
}
