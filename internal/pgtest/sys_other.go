//go:build !linux

package pgtest

import "syscall"

// setParentDeathSignal does nothing: there is no Pdeathsig here, and a
// server outlives a test binary that dies (CleanupStale finds it later).
func setParentDeathSignal(*syscall.SysProcAttr) {}

// removeStaleShm leaves a stale segment alone: not every system here has
// System V shared memory calls in golang.org/x/sys/unix, nor a key in the
// descriptor to check a reused id against.
func removeStaleShm(int64, int) {}
