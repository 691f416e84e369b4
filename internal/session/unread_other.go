//go:build !linux

package session

import "net"

// unreadInput is only implemented on Linux; elsewhere pipelined bytes after
// an SSLRequest are read as the next packet.
func unreadInput(net.Conn) bool { return false }
