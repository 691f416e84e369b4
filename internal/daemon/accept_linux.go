package daemon

import (
	"context"
	"net"
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

// configureFD sets the configured TCP options of a client socket of
// internal/fdconn, as raw calls. Unlike a *net.TCPConn (see
// configureClientSocket) it comes without Go's TCP_NODELAY.
func (d *Daemon) configureFD(c *fdconn.Conn) {
	g := d.Config().General
	_ = rawio.Control(c, func(f uintptr) { setClientOptions(int(f), &g) })
	_ = sockopt.SetUserTimeout(c, g.TCPUserTimeout) // config refuses it where there is no such option
}

// setClientOptions: tcp_no_delay, tcp_socket_buffer_size and keepalive as
// net.TCPConn.SetKeepAliveConfig sets them (an idle time or interval of 0
// is 15 s, a count of 0 is 9, a negative value the system's default).
func setClientOptions(fd int, g *config.General) {
	set := func(level, opt, v int) { _ = rawio.SetsockoptIntFD(fd, level, opt, v) }
	if g.TCPNoDelay {
		set(unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	if n := int(g.TCPSocketBufferSize); n > 0 {
		set(unix.SOL_SOCKET, unix.SO_RCVBUF, n)
		set(unix.SOL_SOCKET, unix.SO_SNDBUF, n)
	}
	set(unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	if s := keepaliveSeconds(g.TCPKeepalivesIdle); s > 0 {
		set(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, s)
	}
	if s := keepaliveSeconds(g.TCPKeepalivesInterval); s > 0 {
		set(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, s)
	}
	switch n := g.TCPKeepalivesCount; {
	case n == 0:
		set(unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 9)
	case n > 0:
		set(unix.IPPROTO_TCP, unix.TCP_KEEPCNT, n)
	}
}

// keepaliveSeconds is d in whole seconds, rounded up as Go's net does: 0
// is 15 s, negative 0 (leave the system's default).
func keepaliveSeconds(d time.Duration) int {
	switch {
	case d == 0:
		return 15
	case d < 0:
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}
