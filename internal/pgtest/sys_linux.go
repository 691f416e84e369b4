package pgtest

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal makes the kernel kill the child when the thread
// that started it exits (Pdeathsig).
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// removeStaleShm removes System V shared memory segment id once nothing
// is attached to it, if it still has key (ids are reused).
func removeStaleShm(key int64, id int) {
	// Orphaned backends detach when they notice the postmaster is gone.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var desc unix.SysvShmDesc
		if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &desc); err != nil {
			return
		}
		// The id may have been reused by someone else: check the key too.
		if int64(desc.Perm.Key) != key {
			return
		}
		if desc.Nattch == 0 {
			_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(pollInterval)
	}
}
