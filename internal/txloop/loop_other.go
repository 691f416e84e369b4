//go:build !linux

package txloop

// Loop is an event loop; there are none on this system.
type Loop struct{}

// New returns ErrUnsupported.
func New() (*Loop, error) { return nil, ErrUnsupported }

// NewGroup returns ErrUnsupported.
func NewGroup(int) (Group, error) { return nil, ErrUnsupported }

// Add returns ErrUnsupported.
func (l *Loop) Add(int, Member) error { return ErrUnsupported }

// Del does nothing.
func (l *Loop) Del(int) {}

// Len is 0.
func (l *Loop) Len() int { return 0 }

// Kick reports false.
func (l *Loop) Kick(func()) bool { return false }

// Close does nothing.
func (l *Loop) Close() {}
