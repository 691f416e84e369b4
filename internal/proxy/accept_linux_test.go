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
}
