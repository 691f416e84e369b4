package harness

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr is what the harness's children start with: killed when the
// harness dies (Pdeathsig), with cred's identity when cred is not nil.
func childAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
}

// bindAddressNoPort defers a socket's source port to connect, so that
// many clients of one source address do not run out of ports at bind.
func bindAddressNoPort(fd int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
}
