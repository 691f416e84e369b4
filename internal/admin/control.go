package admin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/session"
)

// matchPools returns the pools of db, or all pools for "". A configured
// database without static users has no pools: that is not an error.
func (c *Console) matchPools(db, verb string) ([]*pooler.Pool, error) {
	all := c.d.Pools.Pools()
	if db == "" {
		return all, nil
	}
	if session.AdminDatabases[db] {
		return nil, errorf(FailNotAllowed, "55000", "cannot %s admin db: %s", strings.ToLower(verb), db)
	}
	var out []*pooler.Pool
	for _, p := range all {
		if p.Database == db {
			out = append(out, p)
		}
	}
	if len(out) == 0 && !c.d.Pools.HasDatabase(db) {
		return nil, errorf(FailNoDatabase, "3D000", "no such database: %s", db)
	}
	return out, nil
}

func (c *Console) logCommand(verb, db string) {
	if db == "" {
		c.log.Info(verb + " command issued")
		return
	}
	c.log.Info(verb+" command issued", zap.String("database", db))
}

// pause stops every matching pool from handing out connections and waits,
// at most pauseTimeout, for the connections in use to come back (they are
// closed then). All pools are paused at once, not one after another.
func (c *Console) pause(ctx context.Context, dst []byte, db string) ([]byte, error) {
	pools, err := c.matchPools(db, verbPause)
	if err != nil {
		return dst, err
	}
	c.logCommand(verbPause, db)
	ctx, cancel := context.WithTimeout(ctx, c.pauseTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var busy atomic.Int32
	for _, p := range pools {
		wg.Add(1)
		go pauseOne(ctx, p, &wg, &busy)
	}
	wg.Wait()
	if n := busy.Load(); n > 0 {
		dst = appendNotice(dst, fmt.Sprintf("%d pool(s) still have server connections in use after %s", n, c.pauseTimeout),
			"The pools are paused; those connections are closed when their clients release them.")
		c.log.Warn("PAUSE timed out waiting for server connections in use", zap.Int32("pools", n), zap.Duration("timeout", c.pauseTimeout))
	}
	return appendTag(dst, "PAUSE"), nil
}

func pauseOne(ctx context.Context, p *pooler.Pool, wg *sync.WaitGroup, busy *atomic.Int32) {
	defer wg.Done()
	if err := p.Conns().Pause(ctx); err != nil {
		busy.Add(1)
	}
}

func (c *Console) resume(dst []byte, db string) ([]byte, error) {
	pools, err := c.matchPools(db, verbResume)
	if err != nil {
		return dst, err
	}
	c.logCommand(verbResume, db)
	for _, p := range pools {
		p.Conns().Resume()
	}
	return appendTag(dst, "RESUME"), nil
}

// reconnect moves the pools to a new epoch: idle server connections close
// now, the ones in use when they are released.
func (c *Console) reconnect(dst []byte, db string) ([]byte, error) {
	pools, err := c.matchPools(db, verbReconnect)
	if err != nil {
		return dst, err
	}
	c.logCommand(verbReconnect, db)
	for _, p := range pools {
		p.Conns().Reconnect()
		p.ExpireServerParams()
		p.XactTimes.Reset()
		p.QueryTimes.Reset()
	}
	return appendTag(dst, "RECONNECT"), nil
}

func (c *Console) reload(dst []byte) ([]byte, error) {
	c.logCommand(verbReload, "")
	if err := c.d.Reload(); err != nil {
		return dst, errorf(FailReload, "F0000", "RELOAD failed, keeping the running configuration: %v", err)
	}
	return appendTag(dst, "RELOAD"), nil
}

// ignoredParams are session settings clients send out of habit; PgBouncer
// answers them with a NOTICE "SET ignored".
var ignoredParams = map[string]bool{
	"client_encoding": true, "default_transaction_isolation": true, "standard_conforming_strings": true,
	"datestyle": true, "timezone": true, "extra_float_digits": true, "application_name": true,
}

func (c *Console) set(dst []byte, key, value string) ([]byte, error) {
	switch {
	case key == "log_level":
	case ignoredParams[key]:
		return appendTag(appendNotice(dst, "SET ignored", ""), "SET"), nil
	case c.isSetting(key):
		return dst, errorf(FailNotAllowed, "55P02", "SET failed: %s cannot be changed from the console; edit the config file and RELOAD", key)
	default:
		return dst, errorf(FailUnknownParameter, "42704", "SET failed: unknown parameter %q", key)
	}
	ch, err := c.parseLevel(value)
	if err != nil {
		return dst, errorf(FailInvalidValue, "22023", "%v", err)
	}
	for _, n := range ch.Notices {
		dst = appendNotice(dst, n, "")
	}
	c.d.Level.SetLevel(ch.Level)
	c.log.Info("log level changed from the admin console", zap.String("log_level", levelName(ch.Level)))
	return appendTag(dst, "SET"), nil
}

func (c *Console) isSetting(key string) bool {
	for _, s := range c.d.Config().Settings() {
		if s.Key == key {
			return true
		}
	}
	return false
}
