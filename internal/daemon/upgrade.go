package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/session"
	"github.com/doorman-go/doorman/internal/upgrade"
)

// Spawn starts the new process of a binary upgrade with the listeners
// given, and returns once it is ready (upgrade.Spawn with the command
// line the caller knows).
type Spawn func(ctx context.Context, listeners []upgrade.Listener) (*upgrade.Child, error)

// UpgradeStats count what binary upgrades did with clients. ForceClosed
// are the clients still here at shutdown_timeout (in a transaction, or
// not yet moved), closed with 58006.
type UpgradeStats struct {
	Started, Aborted                 atomic.Uint64
	Migrated, MigrateFailed, Drained atomic.Uint64
	ForceClosed                      atomic.Uint64
	Received, ReceiveFailed          atomic.Uint64
}

// ErrUpgradeInProgress: a second upgrade request while one runs.
var ErrUpgradeInProgress = errors.New("binary upgrade already in progress")

// banner is logged when the new process refused the configuration.
const banner = "!!!  BINARY UPGRADE ABORTED - SHUTDOWN CANCELLED  !!!\n" +
	"!!!  FIX THE CONFIGURATION BEFORE ATTEMPTING BINARY UPGRADE AGAIN  !!!\n" +
	"!!!  THE SERVER WILL CONTINUE RUNNING WITH THE CURRENT BINARY  !!!"

// RequestUpgrade asks for a binary upgrade (admin UPGRADE); whoever
// serves Upgrades (cmd/pg_doorman) runs it. While one runs, or one is
// asked for and not yet taken, it is ErrUpgradeInProgress.
func (d *Daemon) RequestUpgrade() error {
	if d.upgrading.Load() {
		return ErrUpgradeInProgress
	}
	select {
	case d.upgradeReq <- struct{}{}:
		return nil
	default:
		return ErrUpgradeInProgress
	}
}

// Upgrades delivers the requests of RequestUpgrade.
func (d *Daemon) Upgrades() <-chan struct{} { return d.upgradeReq }

// Upgrade hands over to a new process: spawn starts it with our listeners
// (plus extra, the metrics one) and waits until it is ready; a refused
// config or a new process that does not come up aborts the upgrade and
// this process goes on serving. Then this process stops accepting, moves
// its idle clients to the new one (the rest as they become idle), drains
// what cannot move, and its Serve returns once no client is left or
// shutdown_timeout has passed.
func (d *Daemon) Upgrade(ctx context.Context, extra []upgrade.Listener, spawn Spawn) error {
	if d.ShuttingDown() || !d.upgrading.CompareAndSwap(false, true) {
		return ErrUpgradeInProgress
	}
	d.UpgradeStats.Started.Add(1)
	d.Log.Info("starting binary upgrade and graceful shutdown")
	d.mu.Lock()
	lns := make([]upgrade.Listener, 0, len(d.listeners)+len(extra))
	for _, ln := range d.listeners {
		switch l := ln.(type) {
		case *net.TCPListener:
			lns = append(lns, upgrade.Listener{Kind: upgrade.KindTCP, L: l})
		case *net.UnixListener:
			lns = append(lns, upgrade.Listener{Kind: upgrade.KindUnix, L: l})
		}
	}
	d.mu.Unlock()
	child, err := spawn(ctx, append(lns, extra...))
	if err != nil {
		d.upgrading.Store(false)
		d.UpgradeStats.Aborted.Add(1)
		if errors.Is(err, upgrade.ErrConfigInvalid) {
			d.Log.Error(banner, zap.Error(err))
		} else {
			d.Log.Error("binary upgrade aborted, serving on", zap.Error(err))
		}
		return fmt.Errorf("binary upgrade: %w", err)
	}
	d.Log.Info("New process signaled readiness", zap.Int("pid", child.PID))
	d.once.Do(func() {
		close(d.shutdown)
		go d.handOver(child)
	})
	return nil
}

// handOver is drain for an upgrade: the listeners close (the unix socket
// file stays, the new process listens on it), idle clients move, clients
// in a transaction move once it ends, the rest (TLS, session mode, admin)
// are drained as by a shutdown.
func (d *Daemon) handOver(child *upgrade.Child) {
	defer close(d.drained)
	d.mu.Lock()
	for _, ln := range d.listeners {
		if ul, ok := ln.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
		_ = ln.Close()
	}
	d.closeFDListenersLocked()
	d.mu.Unlock()
	var m session.Migrator
	if child.Channel != nil {
		m = &migrator{ch: child.Channel, stats: &d.UpgradeStats}
		d.Log.Info("Client migration enabled")
	}
	timeout := d.Config().General.ShutdownTimeout
	deadline := time.Now().Add(timeout)
	lastLog := time.Time{}
	told := map[*session.Session]bool{} // drained ones, counted once
	for d.Clients.Len() > 0 && time.Now().Before(deadline) {
		waiting := 0
		for _, s := range d.Clients.List() {
			st := s.State()
			switch {
			case m != nil && s.CanMigrate():
				s.Migrate(m)
				if st != session.StateIdle {
					waiting++
				}
			case m != nil && st == session.StateLogin:
				// Accepted just before the listeners moved: let the login
				// finish, the client then moves (or is drained) like the others.
				waiting++
			case st == session.StateIdle || st == session.StateLogin:
				// Cannot move (TLS, session mode, admin, daemon mode):
				// ended at its idle point, with the seed's drain error
				// (its troubleshooting names this text), and it reconnects.
				if !told[s] {
					told[s] = true
					d.UpgradeStats.Drained.Add(1)
				}
				s.Kill("58006", "pooler is shut down now")
			default:
				waiting++
			}
		}
		if waiting > 0 && time.Since(lastLog) > 5*time.Second {
			d.Log.Info(fmt.Sprintf("waiting for %d clients in transactions", waiting))
			lastLog = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := d.Clients.Len(); n > 0 {
		d.Log.Warn("shutdown_timeout reached, closing clients still in a transaction", zap.Int("clients", n))
		d.UpgradeStats.ForceClosed.Add(uint64(n))
		d.Clients.CloseAll("58006", "pooler is shut down now")
	} else {
		d.Log.Info("All clients disconnected, shutting down")
	}
	if child.Channel != nil {
		_ = child.Channel.Close()
		d.Log.Info("Migration sender finished")
	}
	d.Pools.Close()
}

// migrator sends migrated clients over the channel.
type migrator struct {
	ch    *upgrade.Channel
	stats *UpgradeStats
}

func (m *migrator) Migrate(st *session.MigrationState, f *os.File) error {
	rec, err := json.Marshal(st)
	if err == nil {
		err = m.ch.Send(rec, f)
	}
	if err != nil {
		m.stats.MigrateFailed.Add(1)
		return err
	}
	m.stats.Migrated.Add(1)
	return nil
}

// Inherit makes the daemon use what the old process of an upgrade handed
// over: its listeners instead of opening new ones, and the migration
// channel, whose clients Serve adopts. Call before Listen.
func (d *Daemon) Inherit(in *upgrade.Inherited) { d.inherited = in }

// receive adopts migrated clients until the old process closes the
// channel.
func (d *Daemon) receive(ctx context.Context, ch *upgrade.Channel) {
	d.Log.Info("migration receiver: listening for migrated clients")
	defer d.Log.Info("migration receiver: stopped")
	for {
		rec, f, err := ch.Receive()
		if err != nil {
			d.Log.Info("migration receiver done: migration socket closed", zap.Error(err))
			_ = ch.Close()
			return
		}
		var st session.MigrationState
		nc, err := net.FileConn(f)
		_ = f.Close()
		if err == nil {
			err = json.Unmarshal(rec, &st)
			if err != nil {
				_ = nc.Close()
			}
		}
		if err != nil {
			d.UpgradeStats.ReceiveFailed.Add(1)
			d.Log.Warn("migrated client refused", zap.Error(err))
			continue
		}
		// net.FileConn gave the socket Go's own TCP_NODELAY and
		// keepalives (15 s): the configured ones again, as at accept.
		d.configureClientSocket(nc)
		d.UpgradeStats.Received.Add(1)
		d.conns.Add(1)
		d.wg.Add(1)
		go session.Adopt(ctx, d.env, nc, &st, d.clientEnded)
	}
}

// listenInherited takes the old process's listeners: the TCP one, and the
// unix one when the config still has a unix_socket_dir.
func (d *Daemon) listenInherited(in *upgrade.Inherited) error {
	tcp, ok := in.Listeners[upgrade.KindTCP]
	if !ok {
		return errors.New("binary upgrade: no TCP listener inherited")
	}
	d.listeners = append(d.listeners, tcp)
	if u, ok := in.Listeners[upgrade.KindUnix]; ok {
		if d.Config().General.UnixSocketDir != "" {
			d.listeners = append(d.listeners, u)
		} else {
			_ = u.Close()
		}
	}
	d.Log.Info("listening on inherited sockets", zap.Int("listeners", len(d.listeners)))
	return nil
}
