//go:build !linux

package daemon

import (
	"context"
	"net"
	"syscall"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/fdconn"
)

// acceptFD reports false: outside Linux clients are accepted with package
// net (fdconn.NewPoller fails there, so this is not reached).
func (d *Daemon) acceptFD(context.Context, *fdconn.Poller, net.Listener) bool { return false }

// configureFD does nothing: no fdconn.Conn is made outside Linux.
func (d *Daemon) configureFD(*fdconn.Conn) {}

// listenControl is nil: outside Linux every accepted socket is configured
// on its own (configureClientSocket).
func (d *Daemon) listenControl(*config.General) func(network, address string, c syscall.RawConn) error {
	return nil
}
