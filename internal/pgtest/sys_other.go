//go:build !linux

package pgtest

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal does nothing: there is no Pdeathsig here, and a
// server outlives a test binary that dies (CleanupStale finds it later).
func setParentDeathSignal(*syscall.SysProcAttr) {}

// shmKey: the descriptor here has no key to check an id against, so a
// stale segment is left alone rather than risk another program's.
func shmKey(*unix.SysvShmDesc) (int64, bool) { return 0, false }
