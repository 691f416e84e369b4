package session

import (
	"testing"

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
	h.DoneWaiting(true) // the wait got its server before it read the stop
	require.True(t, s.waited, "a queued wait makes attach look at the client")

	next := h.Waiting()
	require.Equal(t, stop, next, "the channel is reused")
	require.Empty(t, next, "the late stop does not end the next wait")
	h.DoneWaiting(false)
	require.False(t, s.waited, "a server within the spin is no wait")
	s.mu.Lock()
	require.False(t, s.stopWaitLocked())
	s.mu.Unlock()
}
