package rawio

import "net"

// InputQueued is the number of bytes in nc's receive queue not read yet
// (TIOCINQ), as a raw call; 0 when nc has no socket, the call fails or the
// OS has no TIOCINQ (not Linux).
func InputQueued(nc net.Conn) int {
	n := 0
	_ = Control(nc, func(fd uintptr) { n = inputQueued(fd) })
	return n
}
