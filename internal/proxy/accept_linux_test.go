package proxy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/patroni"
)

// TestAcceptFailuresCounted: a port whose accept fails (here: the
// listener shut down for reading, where Linux's accept returns EINVAL, as
// it returns EMFILE out of descriptors) counts each failure and keeps
// trying instead of ending; closing the port still ends its loop.
func TestAcceptFailuresCounted(t *testing.T) {
	t.Parallel()
	l := newEcho(t, "l")
	h := newHarness(t, ports("master", roles(leader)), l.member(patroni.RoleLeader))
	h.proxy.mu.Lock()
	pt := h.proxy.ports[portKey{"c", "master"}]
	h.proxy.mu.Unlock()
	require.NotNil(t, pt)
	rc, err := pt.ln.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) { require.NoError(t, unix.Shutdown(int(fd), unix.SHUT_RD)) }))
	errs := h.proxy.env.metrics.AcceptErrors.WithLabelValues("c", "master")
	require.Eventually(t, func() bool { return testutil.ToFloat64(errs) >= 2 }, 5*time.Second, 10*time.Millisecond,
		"two failed accepts counted: the loop goes on after the first")
	// It backs off: after six failures (5 + 10 + ... + 160 ms of waits)
	// the next wait is 320 ms, so 200 ms later there are at most seven;
	// the 50 ms retry it replaced made four more in that time. A slow
	// machine only makes fewer.
	require.Eventually(t, func() bool { return testutil.ToFloat64(errs) >= 6 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // not synchronisation: the window in which retries are counted
	require.LessOrEqual(t, testutil.ToFloat64(errs), 7.0, "failed accepts back off")
	// After the ninth failure the loop waits a whole second. Closed at
	// the start of that wait, it must end well before the second is out
	// (a loop that slept the back-off out would take about 1 s).
	require.Eventually(t, func() bool { return testutil.ToFloat64(errs) >= 9 }, 10*time.Second, time.Millisecond)
	pt.close(false, ReasonShutdown)
	ended := make(chan struct{})
	go func() { h.proxy.served.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(600 * time.Millisecond):
		t.Fatal("the accept loop slept its back-off out after close")
	}
}

// TestAcceptBackoff: 5 ms after a success, doubling, at most a second.
func TestAcceptBackoff(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	d := time.Duration(0)
	for range 10 {
		d = acceptBackoff(d)
		got = append(got, d)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, got)
}
