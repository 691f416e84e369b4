//go:build !linux

package procnet

// Read returns ErrUnsupported: there is no /proc/net here.
func Read(root string) (Counts, error) { return Counts{}, ErrUnsupported }
