// Package memreturn gives back to the operating system the heap memory the
// Go runtime keeps once the program has stopped using it: after a burst of
// logins, a large result, a storm of reconnects. The runtime's own
// scavenger keeps everything up to about the heap goal resident, and the
// heap goal is twice the live heap at GOGC=100, so a pooler that had a
// burst and went quiet would otherwise hold that memory for good.
//
// Run looks every Interval (runtime/metrics, no stop of the world): once
// the program has allocated at least Busy bytes since the last return and
// less than Quiet within the last interval, it runs ReturnAll (two
// garbage collections, so that sync.Pool contents go too, then
// debug.FreeOSMemory: every free page back to the OS, cached stacks
// included) and reports the bytes released. So a busy spell is followed by
// one collection when it ends, at most one per Busy bytes allocated; a
// program that keeps allocating is left alone.
//
// It owns one goroutine, Run's caller's. It does not change GOGC or a
// memory limit, and it does not decide what the program keeps live.
package memreturn
