package session

import (
	"net"

	"github.com/doorman-go/doorman/internal/rawio"
)

// unreadInput reports whether the client has sent bytes not read yet (the
// kernel's receive queue, TIOCINQ): what PostgreSQL's pq_buffer_has_data
// checks after answering an SSLRequest or GSSENCRequest.
func unreadInput(nc net.Conn) bool { return rawio.InputQueued(nc) > 0 }
