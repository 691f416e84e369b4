package session

import (
	"net"

	"github.com/doorman-go/doorman/internal/rawio"
)

// clientLeft reports, without blocking, whether the client has gone away:
// its socket shows end of file or an error (a reset) with nothing unread
// before it. Unread bytes (pipelined messages, a Terminate, TLS records)
// are left for the client loop, as PostgreSQL runs a query it has read
// whatever follows it.
// nc is the client's connection as the session reads it, raw the socket
// under it (rawio.PeekVia).
func clientLeft(nc, raw net.Conn) bool { return rawio.PeekVia(nc, raw) == rawio.PeekClosed }
