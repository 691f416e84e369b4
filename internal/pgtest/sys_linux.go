package pgtest

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal makes the kernel kill the child when the thread
// that started it exits (Pdeathsig).
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// shmKey is a System V shared memory segment's key; ok is false where the
// descriptor does not carry it.
func shmKey(desc *unix.SysvShmDesc) (key int64, ok bool) { return int64(desc.Perm.Key), true }
