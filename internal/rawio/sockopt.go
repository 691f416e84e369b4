package rawio

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SetLinger is net.TCPConn's SetLinger as a raw call: sec < 0 turns
// lingering off (a close sends FIN and returns at once, the default),
// sec >= 0 makes a close wait up to sec seconds for unsent data (0: a
// close resets the connection). A session sets it after every login, when
// the process may just have gone idle; a call the scheduler sees would
// wake a sleeping sysmon there (the package doc).
func SetLinger(nc net.Conn, sec int) error {
	var errno syscall.Errno
	if err := Control(nc, func(fd uintptr) { errno = setLinger(fd, sec) }); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// SetLingerFD is SetLinger of a descriptor the caller holds open.
func SetLingerFD(fd int, sec int) error {
	if errno := setLinger(uintptr(fd), sec); errno != 0 {
		return errno
	}
	return nil
}

func setLinger(fd uintptr, sec int) syscall.Errno {
	var l unix.Linger
	if sec >= 0 {
		l.Onoff, l.Linger = 1, int32(sec)
	}
	_, _, errno := unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_LINGER,
		uintptr(unsafe.Pointer(&l)), unsafe.Sizeof(l), 0)
	return errno
}

// CloseFD closes a socket descriptor the caller owns, as a raw call. Only
// for a socket whose close cannot wait: lingering off, or not connected.
func CloseFD(fd int) error {
	if _, _, errno := unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// SetsockoptIntFD is setsockopt(2) of an int option as a raw call, for the
// options a client socket gets right after its accept, when the process
// may just have gone idle (the package doc).
func SetsockoptIntFD(fd, level, opt, value int) error {
	v := int32(value)
	if _, _, errno := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&v)), unsafe.Sizeof(v), 0); errno != 0 {
		return errno
	}
	return nil
}
