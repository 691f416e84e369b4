package sockopt

import (
	"fmt"
	"net"
	"syscall"
)

// SetBacklog sets the listen backlog of ln (a *net.TCPListener or
// *net.UnixListener) to n by calling listen(2) again on its socket, which
// Linux, macOS and the BSDs take as a new backlog for a socket that
// already listens; connections already queued stay. The kernel caps n at
// its own limit (net.core.somaxconn, kern.ipc.somaxconn) without an error.
// Package net always listens with that limit itself.
func SetBacklog(ln net.Listener, n int) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return fmt.Errorf("listen backlog: %T has no socket", ln)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("listen backlog: %w", err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), n) }); err != nil {
		return fmt.Errorf("listen backlog: %w", err)
	}
	if lerr != nil {
		return fmt.Errorf("listen backlog %d: %w", n, lerr)
	}
	return nil
}
