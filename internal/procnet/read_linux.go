package procnet

import (
	"fmt"
	"os"
	"path/filepath"
)

// Read counts the sockets of this process. root is normally "/proc"
// (tests pass a fixture directory with self/fd and net/).
func Read(root string) (Counts, error) {
	own, err := ownSockets(filepath.Join(root, "self", "fd"))
	if err != nil {
		return Counts{}, err
	}
	owned := func(inode uint64) bool { _, ok := own[inode]; return ok }
	found := make(map[uint64]struct{}, len(own))
	seen := func(inode uint64) { found[inode] = struct{}{} }
	var c Counts
	for _, t := range []struct {
		name string
		into *TCPCounts
	}{{"tcp", &c.TCP}, {"tcp6", &c.TCP6}} {
		err := parseFile(filepath.Join(root, "net", t.name), func(f *os.File) (err error) {
			*t.into, err = ParseTCP(f, owned, seen)
			return err
		})
		if err != nil {
			return Counts{}, err
		}
	}
	err = parseFile(filepath.Join(root, "net", "unix"), func(f *os.File) (err error) {
		c.Unix, err = ParseUnix(f, owned, seen)
		return err
	})
	if err != nil {
		return Counts{}, err
	}
	c.Unknown = len(own) - len(found)
	return c, nil
}

// parseFile opens path and runs parse on it; a table that does not exist
// (IPv6 disabled) counts nothing.
func parseFile(path string, parse func(*os.File) error) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("procnet: %w", err)
	}
	defer f.Close()
	if err := parse(f); err != nil {
		return fmt.Errorf("procnet: %s: %w", path, err)
	}
	return nil
}

// ownSockets reads the socket inodes of the process from its fd
// directory. Descriptors closed while we read are skipped.
func ownSockets(fdDir string) (map[uint64]struct{}, error) {
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("procnet: %w", err)
	}
	out := make(map[uint64]struct{}, len(ents))
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue
		}
		if inode, ok := socketInode(link); ok {
			out[inode] = struct{}{}
		}
	}
	return out, nil
}
