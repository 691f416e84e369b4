//go:build !linux

package idlepark

import (
	"syscall"

	"go.uber.org/zap"
)

// Parker is a stub outside Linux: nothing is ever parked.
type Parker struct{}

// New returns a Parker whose Park always returns ErrUnsupported.
func New(*zap.Logger) (*Parker, error) { return &Parker{}, nil }

// Park returns ErrUnsupported: the caller keeps its goroutine.
func (*Parker) Park(syscall.Conn, func(WakeReason)) error { return ErrUnsupported }

// Unpark reports false: nothing is parked.
func (*Parker) Unpark(syscall.Conn) bool { return false }

// Len is always 0.
func (*Parker) Len() int { return 0 }

// Close does nothing.
func (*Parker) Close() error { return nil }
