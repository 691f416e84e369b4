package daemon

import (
	"context"
	"net"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/fdconn"
	"github.com/doorman-go/doorman/internal/rawio"
	"github.com/doorman-go/doorman/internal/sockopt"
)

// acceptFD is acceptLoop for a TCP listener whose clients internal/fdconn
// accepts: from accept4 to the transaction core's adoption a client's
// login makes no system call the Go scheduler sees. It reports false, at
// once, if the listener cannot be used so (the caller accepts with
// package net).
func (d *Daemon) acceptFD(ctx context.Context, p *fdconn.Poller, ln net.Listener) bool {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return false
	}
	fl, err := p.Listen(tl)
	if err != nil {
		d.Log.Warn("clients accepted by package net", zap.Error(err))
		return false
	}
	d.mu.Lock()
	if d.listenersClosed {
		d.mu.Unlock()
		_ = fl.Close()
		return true
	}
	d.fdListeners = append(d.fdListeners, fl)
	d.mu.Unlock()
	d.acceptLoop(ctx, func() (net.Conn, error) {
		c, err := fl.Accept()
		if err != nil {
			return nil, err // not a nil *Conn in an interface
		}
		return c, nil
	})
	return true
}

// listenControl sets the configured clientOpts on the TCP listener
// before it listens, so that every socket it accepts inherits them, and
// records them (listenerOpts): a login then makes none of those five
// system calls of its own (docs/benchmarks-passes.md, "Thirty-sixth
// pass"). Before listen(2), so that no connection queued meanwhile misses
// them. (TCP_USER_TIMEOUT would be inherited too, but this machine's
// kernel refused it on a socket that was not yet bound or already
// listening: it is set on each socket.) Nothing is recorded if a call
// fails: each socket then gets its own, as before.
func (d *Daemon) listenControl(g *config.General) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(f uintptr) { serr = setInheritedOptions(int(f), g) }); err != nil || serr != nil {
			d.listenerOpts.Store(nil)
			return nil
		}
		opts := clientOptsOf(g)
		d.listenerOpts.Store(&opts)
		return nil
	}
}

// configureFD sets the configured TCP options of a client socket of
// internal/fdconn, as raw calls. What it inherited from its listener is
// not set again, unless a reload changed the settings since; then every
// one is set, tcp_no_delay off too, since the listener's value is not the
// kernel's default.
func (d *Daemon) configureFD(c *fdconn.Conn) {
	g := d.Config().General
	lo := d.listenerOpts.Load()
	inherited := lo != nil && *lo == clientOptsOf(&g)
	_ = rawio.Control(c, func(f uintptr) {
		if !inherited {
			_ = setInheritedOptions(int(f), &g)
		}
		if n := int(g.TCPSocketBufferSize); n > 0 {
			_ = rawio.SetsockoptIntFD(int(f), unix.SOL_SOCKET, unix.SO_RCVBUF, n)
			_ = rawio.SetsockoptIntFD(int(f), unix.SOL_SOCKET, unix.SO_SNDBUF, n)
		}
	})
	_ = sockopt.SetUserTimeout(c, g.TCPUserTimeout) // config refuses it where there is no such option
}

// setInheritedOptions sets g's clientOpts on fd, each one: tcp_no_delay
// on or off, and keepalive on with its idle time, interval and count as
// net.TCPConn.SetKeepAliveConfig sets them (an idle time or interval of 0
// is 15 s, a count of 0 is 9; config refuses negative values). The first
// error.
func setInheritedOptions(fd int, g *config.General) error {
	var first error
	set := func(level, opt, v int) {
		if err := rawio.SetsockoptIntFD(fd, level, opt, v); err != nil && first == nil {
			first = err
		}
	}
	noDelay := 0
	if g.TCPNoDelay {
		noDelay = 1
	}
	set(unix.IPPROTO_TCP, unix.TCP_NODELAY, noDelay)
	set(unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	set(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, keepaliveSeconds(g.TCPKeepalivesIdle))
	set(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, keepaliveSeconds(g.TCPKeepalivesInterval))
	cnt := g.TCPKeepalivesCount
	if cnt == 0 {
		cnt = 9
	}
	set(unix.IPPROTO_TCP, unix.TCP_KEEPCNT, cnt)
	return first
}

// keepaliveSeconds is d in whole seconds, rounded up as Go's net does; 0
// is 15 s.
func keepaliveSeconds(d time.Duration) int {
	if d <= 0 {
		return 15
	}
	return int((d + time.Second - 1) / time.Second)
}
