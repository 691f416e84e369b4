package sockopt

import (
	"fmt"
	"syscall"
	"time"
)

// SetUserTimeout sets c's user timeout to d; d <= 0 leaves the kernel's
// default. c is a *net.TCPConn or anything else with SyscallConn.
func SetUserTimeout(c syscall.Conn, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("tcp user timeout: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = setUserTimeout(int(fd), d) }); err != nil {
		return fmt.Errorf("tcp user timeout: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("tcp user timeout: %w", serr)
	}
	return nil
}
