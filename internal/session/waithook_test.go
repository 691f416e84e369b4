package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A cancel request stops the wait it came for and no later one: a stop
// the wait did not receive (it ended first) is drained by DoneWaiting.
func TestWaitHookStopsOnlyItsWait(t *testing.T) {
	s := &Session{}
	h := (*waitHook)(s)
	s.mu.Lock()
	require.False(t, s.stopWaitLocked(), "not waiting: nothing to stop")
	s.mu.Unlock()

	stop := h.Waiting()
	s.mu.Lock()
	require.True(t, s.stopWaitLocked())
	require.False(t, s.stopWaitLocked(), "one stop per wait")
	s.mu.Unlock()
	require.Len(t, stop, 1)
	h.DoneWaiting(true, leftCheckAfter) // the wait got its server before it read the stop
	require.Equal(t, waitLong, s.lastWait, "a long queued wait makes attach look at the client")

	next := h.Waiting()
	require.Equal(t, stop, next, "the channel is reused")
	require.Empty(t, next, "the late stop does not end the next wait")
	h.DoneWaiting(false, 0)
	require.Equal(t, waitNone, s.lastWait, "a server within the spin is no wait")
	h.DoneWaiting(true, time.Millisecond)
	require.Equal(t, waitQueued, s.lastWait, "a short queued wait")
	s.mu.Lock()
	require.False(t, s.stopWaitLocked())
	s.mu.Unlock()
}

// lookAfterWait: only a wait in the queue (not the anticipation spin) of
// leftCheckAfter or more makes attach look at the client.
func TestLookAfterWait(t *testing.T) {
	for _, tc := range []struct {
		queued bool
		wait   time.Duration
		want   bool
	}{
		{false, 0, false},
		{false, time.Second, false}, // not queued: the spin, whatever the clock says
		{true, 0, false},
		{true, 5 * time.Millisecond, false},
		{true, leftCheckAfter - time.Microsecond, false},
		{true, leftCheckAfter, true},
		{true, 3 * time.Second, true},
	} {
		require.Equal(t, tc.want, lookAfterWait(tc.queued, tc.wait), "queued %v, wait %v", tc.queued, tc.wait)
	}
}
