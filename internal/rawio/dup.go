package rawio

import (
	"net"

	"golang.org/x/sys/unix"
)

// DupFD returns a close-on-exec dup of nc's descriptor. The dup shares the
// open file description, so it is non-blocking as Go made it, and it keeps
// the socket open when nc is closed: closing nc afterwards takes the socket
// out of Go's netpoller without ending the connection (idle parking, the
// relay's loops).
func DupFD(nc net.Conn) (int, error) {
	fd := -1
	var derr error
	// A raw call (the package doc): the core and the parkers dup a client's
	// socket after its login, when the process may just have gone idle.
	if err := Control(nc, func(f uintptr) {
		r, _, errno := unix.RawSyscall(unix.SYS_FCNTL, f, unix.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			derr = errno
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	return fd, nil
}

// TakeFD is DupFD followed by closing nc, whatever DupFD returned: the
// descriptor is the caller's alone, outside Go's netpoller (the relay's
// and bench/floor's loops). On error it is -1 and the connection is gone.
func TakeFD(nc net.Conn) (int, error) {
	defer nc.Close()
	return DupFD(nc)
}

// CloseFDs closes every descriptor of fds that is not negative.
func CloseFDs(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}
