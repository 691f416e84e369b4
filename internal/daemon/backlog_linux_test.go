package daemon_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// TestBacklog: general.backlog is the listeners' backlog, max_connections
// when it is 0, and a reload changes it on the open listener. A listening
// TCP socket's TCP_INFO reports its backlog (tcpi_sacked); the test finds
// the daemon's among this process's descriptors.
func TestBacklog(t *testing.T) {
	d := apptest.Start(t, config(t, "  backlog: 37"))
	require.EqualValues(t, 37, listenerBacklog(t, d.Port))

	d.WriteConfig(t, config(t, "  backlog: 0\n  max_connections: 51"))
	require.NoError(t, d.Daemon.Reload())
	require.EqualValues(t, 51, listenerBacklog(t, d.Port), "0: max_connections")

	c, err := dial(t, d, "benchdb")
	require.NoError(t, err, "the listener still serves")
	c.Close(context.Background())
}

// listenerBacklog is the backlog of this process's listening TCP socket on
// port.
func listenerBacklog(t *testing.T, port int) uint32 {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			continue
		}
		if in4, ok := sa.(*unix.SockaddrInet4); !ok || in4.Port != port {
			continue
		}
		ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err == nil && ti.State == 10 { // TCP_LISTEN
			return ti.Sacked
		}
	}
	t.Fatalf("no listening socket on port %d", port)
	return 0
}
