package proxy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

// TestHoldTimeout: a write port with hold_timeout keeps a new connection
// it cannot route (no leader) open and routes it as soon as a topology
// has a leader; past the timeout it refuses; without the setting it
// refuses at once. Nothing reaches a backend before it is eligible.
func TestHoldTimeout(t *testing.T) {
	t.Parallel()
	l1, r := newEcho(t, "l1"), newEcho(t, "r")
	held, short := roles(leader), roles(leader)
	held.HoldTimeout, short.HoldTimeout = 5*time.Second, 200*time.Millisecond
	h := newHarness(t, ports("held", held, "short", short, "plain", roles(leader)),
		l1.member(patroni.RoleReplica), r.member(patroni.RoleReplica))
	m := h.proxy.env.metrics
	count := func(port, result string) float64 {
		return testutil.ToFloat64(m.Held.WithLabelValues("c", port, result))
	}
	holding := func(port string) float64 { return testutil.ToFloat64(m.Holding.WithLabelValues("c", port)) }

	refused(t, h.addr("plain"))
	require.Equal(t, 1.0, h.refusedCount("plain", ReasonNoLeader))
	require.Zero(t, count("plain", "refused"), "no hold_timeout: refused at once, not held")

	start := time.Now()
	refused(t, h.addr("short"))
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "held for hold_timeout first")
	require.Equal(t, 1.0, count("short", "refused"))
	require.Equal(t, 1.0, h.refusedCount("short", ReasonNoLeader))

	type result struct {
		c   *client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := tryConnect(h.addr("held"))
		done <- result{c, err}
	}()
	require.Eventually(t, func() bool { return holding("held") == 1 }, waitFor, time.Millisecond)
	require.Zero(t, l1.active.Load(), "nothing reaches a backend while held")
	h.update(l1.member(patroni.RoleLeader), r.member(patroni.RoleReplica))
	res := <-done
	require.NoError(t, res.err)
	t.Cleanup(func() { _ = res.c.conn.Close() })
	require.Equal(t, "l1", res.c.backend, "routed to the leader of the new topology")
	require.Equal(t, 1.0, count("held", "routed"))
	require.Zero(t, holding("held"))
	require.Zero(t, h.refusedCount("held", ReasonNoLeader))
}
