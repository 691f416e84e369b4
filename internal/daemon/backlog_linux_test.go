package daemon_test

import (
	"context"
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
	ti, err := unix.GetsockoptTCPInfo(seListenerFd(t, port), unix.IPPROTO_TCP, unix.TCP_INFO)
	require.NoError(t, err)
	return ti.Sacked
}
