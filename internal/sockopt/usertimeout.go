package sockopt

import (
	"fmt"
	"net"
	"time"

	"github.com/doorman-go/doorman/internal/rawio"
)

// SetUserTimeout sets nc's user timeout to d; d <= 0 leaves the kernel's
// default. nc is a *net.TCPConn (rawio.Control: anything with a socket).
func SetUserTimeout(nc net.Conn, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	var serr error
	if err := rawio.Control(nc, func(fd uintptr) { serr = setUserTimeout(int(fd), d) }); err != nil {
		return fmt.Errorf("tcp user timeout: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("tcp user timeout: %w", serr)
	}
	return nil
}
