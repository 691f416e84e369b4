package proxy

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

func (h *harness) suspicions(t Trigger) float64 {
	return testutil.ToFloat64(h.proxy.env.metrics.Suspicions.WithLabelValues("c", string(t)))
}

func (h *harness) fastRefreshes() float64 {
	return testutil.ToFloat64(h.proxy.env.metrics.FastRefreshes.WithLabelValues("c"))
}

func (h *harness) fastPolling() float64 {
	return testutil.ToFloat64(h.proxy.env.metrics.FastPolling.WithLabelValues("c"))
}

// eligible lists the members that take new connections on port.
func (h *harness) eligible(port string) []string {
	var out []string
	for _, b := range h.proxy.Backends("c", port) {
		if b.Eligible {
			out = append(out, b.Member)
		}
	}
	return out
}

// TestConnectFailureRefreshesAtOnce: Patroni already names node2 leader but
// the proxy polls only once an hour; a refused connect to the old leader
// makes it fetch /cluster at once, so a retry reaches node2. Fast polling
// stops once the topology has stayed the same.
func TestConnectFailureRefreshesAtOnce(t *testing.T) {
	t.Parallel()
	n1, n2 := newEcho(t, "node1"), newEcho(t, "node2")
	h := newHarness(t, ports("master", roles(leader)), n1.member(patroni.RoleLeader), n2.member(patroni.RoleReplica))
	c := connect(t, h.addr("master"))
	require.Equal(t, "node1", c.backend)
	require.NoError(t, c.conn.Close())
	h.backendCounts("master", 0) // no open connection whose close could trigger first
	before := h.fastRefreshes()

	h.setMembers(n1.member(patroni.RoleReplica), n2.member(patroni.RoleLeader)) // not applied: no poll for an hour
	require.NoError(t, n1.ln.Close())                                           // the old leader refuses connections
	// The first client is refused (its only backend failed) or, if the
	// refresh won the race, already falls over to node2.
	if c, err := tryConnect(h.addr("master")); err == nil {
		require.Equal(t, "node2", c.backend)
		_ = c.conn.Close()
	} else {
		require.ErrorIs(t, err, errRefused)
	}
	require.Positive(t, h.suspicions(TriggerConnectFailed))
	require.Zero(t, h.suspicions(TriggerServerClosed))
	require.Eventually(t, func() bool {
		c, err := tryConnect(h.addr("master"))
		if err != nil {
			return false
		}
		defer c.conn.Close()
		return c.backend == "node2"
	}, waitFor, 10*time.Millisecond, "a retry reaches the new leader without waiting for the poll interval")
	require.Greater(t, h.fastRefreshes(), before)
	require.Eventually(t, func() bool { return h.fastPolling() == 0 }, waitFor, 10*time.Millisecond,
		"fast polling ends once the topology is stable")
}

// TestServerCloseRefreshes: the server side of a connection to the leader
// ends first (PostgreSQL shutting down for a demotion): the proxy fetches
// /cluster at once, without any new client connection.
func TestServerCloseRefreshes(t *testing.T) {
	t.Parallel()
	n1, n2 := newEcho(t, "node1"), newEcho(t, "node2")
	h := newHarness(t, ports("master", roles(leader)), n1.member(patroni.RoleLeader), n2.member(patroni.RoleReplica))
	c := connect(t, h.addr("master"))
	require.Equal(t, "node1", c.backend)
	h.setMembers(n1.member(patroni.RoleReplica), n2.member(patroni.RoleLeader))
	require.NoError(t, n1.ln.Close()) // node1's serve loop ends and closes its open connection
	c.closed()
	require.Eventually(t, func() bool { return h.suspicions(TriggerServerClosed) == 1 }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool {
		e := h.eligible("master")
		return len(e) == 1 && e[0] == "node2"
	}, waitFor, 5*time.Millisecond, "the new leader is applied without a new connection or a poll")
	require.Zero(t, h.suspicions(TriggerConnectFailed))
}

// TestClientCloseIsNoEvidence: clients ending their own connections (the
// normal case) and replica connections closed by the server trigger
// nothing.
func TestClientCloseIsNoEvidence(t *testing.T) {
	t.Parallel()
	n1, n2 := newEcho(t, "node1"), newEcho(t, "node2")
	h := newHarness(t, ports("master", roles(leader), "replicas", roles(async)),
		n1.member(patroni.RoleLeader), n2.member(patroni.RoleReplica))
	for range 5 {
		c := connect(t, h.addr("master"))
		c.alive()
		require.NoError(t, c.conn.Close())
	}
	r := connect(t, h.addr("replicas"))
	require.Equal(t, "node2", r.backend)
	require.NoError(t, n2.ln.Close())
	r.closed()
	require.NoError(t, r.conn.Close())
	h.backendCounts("master", 0)
	h.backendCounts("replicas", 0)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(h.proxy.env.metrics.Connections.WithLabelValues("c", "replicas", portAddrString(n2.port))) == 0
	}, waitFor, time.Millisecond)
	require.Zero(t, h.suspicions(TriggerServerClosed))
	require.Zero(t, h.suspicions(TriggerConnectFailed))
	require.Zero(t, h.fastRefreshes())
}

// TestFastRefreshIsRateBounded: a storm of failing connects to a dead leader
// (node loss: Patroni keeps naming it until its key expires) costs at most
// one extra /cluster fetch per fastPoll, however many connections fail.
func TestFastRefreshIsRateBounded(t *testing.T) {
	t.Parallel()
	n1 := newEcho(t, "node1")
	h := newHarness(t, ports("master", roles(leader)), n1.member(patroni.RoleLeader))
	require.NoError(t, n1.ln.Close())
	start := time.Now()
	before := h.patroni.Requests()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 10 {
				if c, err := tryConnect(h.addr("master")); err == nil {
					_ = c.conn.Close()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.Equal(t, 200.0, h.suspicions(TriggerConnectFailed), "every failed connect to the leader is evidence")
	bound := float64(elapsed/fastPoll) + 2
	require.LessOrEqual(t, h.fastRefreshes(), bound, "extra fetches in %s", elapsed)
	require.LessOrEqual(t, float64(h.patroni.Requests()-before), bound, "GET /cluster in %s", elapsed)
	require.Positive(t, h.fastRefreshes())
}

// TestFastPollingOutlastsRestartInPlace: a leader restarting in place
// (state starting) makes the write port refuse, so no client traffic can
// bring new evidence; fast polling goes on while there is no confirmed
// leader, and the port opens as soon as Patroni says running again, with
// the hourly poll nowhere near.
func TestFastPollingOutlastsRestartInPlace(t *testing.T) {
	t.Parallel()
	n1 := newEcho(t, "node1")
	h := newHarness(t, ports("master", roles(leader)), n1.member(patroni.RoleLeader))
	require.Equal(t, []string{"node1"}, h.eligible("master"))
	starting := n1.member(patroni.RoleLeader)
	starting.State = patroni.StateStarting
	h.setMembers(starting)
	h.proxy.env.suspect("c", TriggerServerClosed)
	require.Eventually(t, func() bool { return len(h.eligible("master")) == 0 }, waitFor, 5*time.Millisecond)
	polls := h.fastRefreshes()
	require.Eventually(t, func() bool { return h.fastRefreshes() >= polls+2*fastStable }, waitFor, 10*time.Millisecond,
		"re-polling goes on past %d equal answers while there is no serving leader", fastStable)
	require.Equal(t, 1.0, h.fastPolling())
	h.setMembers(n1.member(patroni.RoleLeader))
	require.Eventually(t, func() bool {
		e := h.eligible("master")
		return len(e) == 1 && e[0] == "node1"
	}, waitFor, 5*time.Millisecond, "the port opens on the next fast poll")
	require.Eventually(t, func() bool { return h.fastPolling() == 0 }, waitFor, 10*time.Millisecond)
}
