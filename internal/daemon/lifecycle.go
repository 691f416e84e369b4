package daemon

import (
	"fmt"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/logging"
	"github.com/doorman-go/doorman/internal/session"
)

// Reload reads the config file again and applies it. On any error the
// running configuration stays.
func (d *Daemon) Reload() error {
	cfg, warnings, err := config.Load(d.cfgPath)
	if err != nil {
		d.reloadFailed(err)
		return fmt.Errorf("reload: %w", err)
	}
	for _, w := range warnings {
		d.Log.Warn(w)
	}
	old := d.Config().General
	if cfg.General.Host != old.Host || cfg.General.Port != old.Port {
		d.Log.Warn("general.host and general.port are fixed at start; restart to change them")
	}
	if cfg.General.SyslogProgName != old.SyslogProgName {
		d.Log.Warn("general.syslog_prog_name is fixed at start; restart to change it")
		cfg.General.SyslogProgName = old.SyslogProgName
	}
	if cfg.General.TransactionLoop != old.TransactionLoop {
		d.Log.Warn("general.transaction_loop is fixed at start; restart to change it")
		// The running configuration (SHOW CONFIG) says what runs.
		cfg.General.TransactionLoop = old.TransactionLoop
	}
	if err := d.setHBA(cfg); err != nil {
		d.reloadFailed(err)
		return err
	}
	tlsOK := d.reloadClientTLS(&old, &cfg.General)
	if n := listenBacklog(&cfg.General); n != listenBacklog(&old) {
		if err := d.setBacklog(n); err != nil {
			d.Log.Warn("general.backlog not applied", zap.Int("backlog", n), zap.Error(err))
		}
	}
	d.Pools.Apply(cfg)
	d.Memory.SetLimit(int64(cfg.General.MaxMemoryUsage))
	if lvl, err := logging.ParseLevel(cfg.General.LogLevel, zapcore.InfoLevel); err != nil {
		d.Log.Warn("general.log_level not applied, keeping the current level", zap.String("log_level", logging.LevelName(d.Level.Level())), zap.Error(err))
	} else {
		d.Level.SetLevel(lvl.Level)
	}
	d.reloads.Add(1)
	d.reloadFailure.Store(!tlsOK) // pg_doorman_config_last_reload_successful shows a certificate not reloaded
	if !tlsOK {
		d.reloadFailures.Add(1)
	}
	d.Log.Info("configuration reloaded", zap.String("path", d.cfgPath), zap.Int("pools", len(cfg.Pools)))
	return nil
}

// reloadFailed records a reload that kept the running configuration.
func (d *Daemon) reloadFailed(err error) {
	d.reloadFailure.Store(true)
	d.reloadFailures.Add(1)
	d.Log.Error("reload failed, keeping the running configuration", zap.Error(err))
}

// ReloadStats reports successful reloads and whether the last one failed.
func (d *Daemon) ReloadStats() (uint64, bool) { return d.reloads.Load(), d.reloadFailure.Load() }

// ReloadFailures counts the reloads that failed since start: the ones that
// kept the running configuration, and the ones that applied it but kept
// the client TLS certificate they could not load.
func (d *Daemon) ReloadFailures() uint64 { return d.reloadFailures.Load() }

// Shutdown starts a graceful shutdown and returns at once; Serve returns
// when it is done.
func (d *Daemon) Shutdown() {
	d.once.Do(func() {
		close(d.shutdown)
		go d.drain()
	})
}

// ShuttingDown reports whether Shutdown was called.
func (d *Daemon) ShuttingDown() bool {
	select {
	case <-d.shutdown:
		return true
	default:
		return false
	}
}

// closeFDListenersLocked closes acceptFD's listeners with the listeners
// they dup, under mu; later ones are refused.
func (d *Daemon) closeFDListenersLocked() {
	d.listenersClosed = true
	for _, l := range d.fdListeners {
		_ = l.Close()
	}
	d.fdListeners = nil
}

func (d *Daemon) drain() {
	defer close(d.drained)
	d.mu.Lock()
	for _, ln := range d.listeners {
		_ = ln.Close()
	}
	d.closeFDListenersLocked()
	d.mu.Unlock()
	for _, p := range d.Pools.Pools() {
		p.Conns().Retain(-1) // closes nothing young; idle ones go below
	}
	timeout := d.Config().General.ShutdownTimeout
	deadline := time.Now().Add(timeout)
	busy := 0
	for _, s := range d.Clients.List() {
		if s.State() == session.StateActive || s.State() == session.StateWaiting {
			busy++
		}
	}
	d.Log.Info("shutting down", zap.Int("clients", d.Clients.Len()), zap.Int("in_transaction", busy), zap.Duration("shutdown_timeout", timeout))
	for d.Clients.Len() > 0 && time.Now().Before(deadline) {
		for _, s := range d.Clients.List() {
			if st := s.State(); st == session.StateIdle || st == session.StateLogin {
				s.Kill("58006", "pooler is shut down now")
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := d.Clients.Len(); n > 0 {
		d.Log.Warn("shutdown_timeout reached, closing clients still in a transaction", zap.Int("clients", n))
		d.Clients.CloseAll("58006", "pooler is shut down now")
	}
	d.Pools.Close()
}

// reloadClientTLS loads the client-side certificate, key and CA again
// (beyond the seed, where they need a restart): new handshakes use them,
// connected clients keep theirs. tls_mode, whether TLS is offered at all
// and tls_rate_limit_per_second stay as started. A failure keeps the old
// material and does not fail the rest of the reload (config.Load has
// checked the files already, so it means they changed in between) but
// counts as a failed reload.
func (d *Daemon) reloadClientTLS(old, g *config.General) bool {
	if g.TLSMode != old.TLSMode || (g.TLSCertificate == "") != (old.TLSCertificate == "") || g.TLSRateLimitPerSecond != old.TLSRateLimitPerSecond {
		d.Log.Warn("general.tls_mode, turning client TLS on or off and tls_rate_limit_per_second are fixed at start; restart to change them")
	}
	m, err := d.tls.Reload(g.ClientTLSFiles())
	if err != nil {
		d.Log.Error("client TLS certificate not reloaded, keeping the current one", zap.Error(err))
		return false
	}
	if m != nil {
		d.Log.Info("client TLS certificate loaded", zap.String("subject", m.Leaf.Subject.String()),
			zap.String("serial", m.Leaf.SerialNumber.String()), zap.Time("not_after", m.Leaf.NotAfter))
	}
	return true
}
