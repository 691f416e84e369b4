//go:build !linux

package fdconn

import (
	"errors"
	"net"
	"syscall"
)

// ErrClosed is what a closed Poller's calls return.
var ErrClosed = errors.New("fdconn: poller closed")

// Poller is a stub outside Linux: NewPoller fails, and the caller accepts
// with package net.
type Poller struct{}

// NewPoller returns errors.ErrUnsupported.
func NewPoller() (*Poller, error) { return nil, errors.ErrUnsupported }

// Listen returns errors.ErrUnsupported.
func (*Poller) Listen(*net.TCPListener) (*Listener, error) { return nil, errors.ErrUnsupported }

// Len is 0.
func (*Poller) Len() int { return 0 }

// Close does nothing.
func (*Poller) Close() error { return nil }

// Listener is a stub outside Linux.
type Listener struct{}

// Accept returns errors.ErrUnsupported.
func (*Listener) Accept() (*Conn, error) { return nil, errors.ErrUnsupported }

// Conn is a stub outside Linux; no value of it is ever made.
type Conn struct{ net.Conn }

// Detach returns errors.ErrUnsupported.
func (*Conn) Detach() (int, error) { return -1, errors.ErrUnsupported }

// Promote returns errors.ErrUnsupported.
func (*Conn) Promote() error { return errors.ErrUnsupported }

// CloseWrite returns errors.ErrUnsupported.
func (*Conn) CloseWrite() error { return errors.ErrUnsupported }

// SyscallConn returns errors.ErrUnsupported.
func (*Conn) SyscallConn() (syscall.RawConn, error) { return nil, errors.ErrUnsupported }

// PlainSocket marks the Conn as a plain socket for rawio.Wrap.
func (*Conn) PlainSocket() {}

// Close does nothing.
func (*Listener) Close() error { return nil }
