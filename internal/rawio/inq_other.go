//go:build !linux

package rawio

// inputQueuedSupported: no TIOCINQ here, so WriteAwaitInput is Write.
const inputQueuedSupported = false

func inputQueued(uintptr) int { return 0 }
