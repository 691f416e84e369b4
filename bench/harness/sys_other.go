//go:build !linux

package harness

import "syscall"

// childAttr: no Pdeathsig here; the bench runs on Linux, and elsewhere
// only builds.
func childAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// bindAddressNoPort: the option is Linux's; bind takes a port at once.
func bindAddressNoPort(int) error { return nil }
