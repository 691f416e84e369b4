//go:build linux

package session_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/session"
)

// What the core's set must report again after the loop served it: the
// rest of a read that filled the loop's buffer, and a hang-up that came
// with the client's last bytes. The set is edge-triggered, so the loop
// reports them to itself (Core.again, docs/benchmarks-passes.md's
// thirty-fourth and thirty-fifth passes); without that these tests time
// out.

// TestCoreReadsPastAFullBuffer: a pipeline whose first 32 KiB (the core's
// read buffer) end on a message boundary, with more behind it in the same
// write, is answered whole: the full read leaves the rest in the socket,
// and the loop reads it although nothing new arrives.
func TestCoreReadsPastAFullBuffer(t *testing.T) {
	d := startCore(t, "transaction", 2)
	c := hmRaw(t, d)
	require.Eventually(t, func() bool { return parkedCount(d) == 1 }, 5*time.Second, 5*time.Millisecond,
		"the client is the core's before it sends")

	q := hmQuery("SELECT 01;") // 16 bytes
	require.Len(t, q, 16)
	const inBuffer, behind = session.CoreReadSize / 16, 100
	_, err := c.Write(bytes.Repeat(q, inBuffer+behind))
	require.NoError(t, err)

	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	for i := 0; i < inBuffer+behind; i++ {
		got := readUntilReady(t, c)
		require.Equal(t, []string{"T", "D", "C", "Z"}, got, "answer %d", i)
	}
}

// TestCoreHalfClosedClientEnds: a client that sends a query and shuts
// down its side of the connection in the same moment is noticed: the
// hang-up comes in the same event as the query, and a read after the
// query finds the end of the file. The session ends and its server goes
// back to the pool.
func TestCoreHalfClosedClientEnds(t *testing.T) {
	d := startCore(t, "transaction", 1)
	c := hmRaw(t, d)
	require.Eventually(t, func() bool { return parkedCount(d) == 1 }, 5*time.Second, 5*time.Millisecond,
		"the client is the core's before it sends")
	tc, ok := c.(*net.TCPConn)
	require.True(t, ok)
	_, err := c.Write(hmQuery("SELECT pg_sleep(0.05)"))
	require.NoError(t, err)
	require.NoError(t, tc.CloseWrite())

	// pg_doorman closes the connection: the read ends, whatever it got
	// before the end.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.Copy(io.Discard, c)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection was not closed: %v", err)

	p, ok := d.Daemon.Pools.Lookup("appdb", "app")
	require.True(t, ok)
	require.Eventually(t, func() bool {
		return len(d.Daemon.Clients.List()) == 0 && p.Conns().Stats().Busy == 0
	}, 5*time.Second, 10*time.Millisecond, "the session ended and its server is back")
}
