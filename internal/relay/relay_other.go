//go:build !linux

package relay

import "net"

// Relay is not available on this system; New says so.
type Relay struct{}

// Pair is not available on this system.
type Pair struct{}

// New returns ErrUnsupported on systems other than Linux.
func New(int) (*Relay, error) { return nil, ErrUnsupported }

// Add closes both connections and returns ErrUnsupported.
func (*Relay) Add(client, server *net.TCPConn, _ Events) (*Pair, error) {
	_ = client.Close()
	_ = server.Close()
	return nil, ErrUnsupported
}

// Close does nothing.
func (*Relay) Close() {}

// Done, ServerEnded, Cut and Err exist so that callers compile.
func (*Pair) Done() <-chan struct{}        { return nil }
func (*Pair) ServerEnded() <-chan struct{} { return nil }
func (*Pair) Cut()                         {}
func (*Pair) Err() error                   { return ErrUnsupported }
