//go:build !linux

package upgrade

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// seqpacketPair makes the migration socketpair where socketpair(2) takes
// no SOCK_CLOEXEC: close-on-exec is set under the fork lock, so that no
// child started meanwhile inherits either end. Where AF_UNIX has no
// SOCK_SEQPACKET it fails, and a binary upgrade with it.
func seqpacketPair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
	if err != nil {
		return fds, err
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return fds, nil
}
