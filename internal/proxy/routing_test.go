package proxy

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

func ports(kv ...any) map[string]proxyconfig.Port {
	out := map[string]proxyconfig.Port{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(proxyconfig.Port)
	}
	return out
}

func roles(rs ...proxyconfig.Role) proxyconfig.Port { return proxyconfig.Port{Roles: rs} }

func TestRoleRouting(t *testing.T) {
	t.Parallel()
	l, s, a := newEcho(t, "leader1"), newEcho(t, "sync1"), newEcho(t, "async1")
	h := newHarness(t, ports("master", roles(leader), "replicas", roles(syncR, async), "sync", roles(syncR), "async", roles(async), "any", roles(anyR)),
		l.member(patroni.RoleLeader), s.member(patroni.RoleSyncStandby), a.member(patroni.RoleReplica))

	for range 3 {
		require.Equal(t, "leader1", connect(t, h.addr("master")).backend)
		require.Equal(t, "sync1", connect(t, h.addr("sync")).backend)
		require.Equal(t, "async1", connect(t, h.addr("async")).backend)
	}
	var rep []*client
	for range 4 {
		rep = append(rep, connect(t, h.addr("replicas")))
	}
	require.Equal(t, map[string]int{"sync1": 2, "async1": 2}, tally(rep))
	var all []*client
	for range 6 {
		all = append(all, connect(t, h.addr("any")))
	}
	require.Equal(t, map[string]int{"leader1": 2, "sync1": 2, "async1": 2}, tally(all))
	for _, c := range append(rep, all...) {
		c.alive()
	}
}

func TestLeastConnections(t *testing.T) {
	t.Parallel()
	l, r1, r2, r3 := newEcho(t, "l"), newEcho(t, "r1"), newEcho(t, "r2"), newEcho(t, "r3")
	h := newHarness(t, ports("ro", roles(async)), l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica), r2.member(patroni.RoleReplica))

	var cs []*client
	for range 6 {
		cs = append(cs, connect(t, h.addr("ro")))
	}
	require.Equal(t, map[string]int{"r1": 3, "r2": 3}, tally(cs))

	// Close two connections of r1: the next two go to r1.
	var closedN int
	for i, c := range cs {
		if c.backend == "r1" && closedN < 2 {
			_ = c.conn.Close()
			cs[i] = nil
			closedN++
		}
	}
	require.Equal(t, map[string]int{"r1": 1, "r2": 3}, h.backendCounts("ro", 4))
	for range 2 {
		require.Equal(t, "r1", connect(t, h.addr("ro")).backend)
	}

	// A new member joins: counters of the others are kept across the update,
	// so the newcomer takes new connections until it has caught up.
	h.update(l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica), r2.member(patroni.RoleReplica), r3.member(patroni.RoleReplica))
	require.Equal(t, map[string]int{"r1": 3, "r2": 3}, h.backendCounts("ro", 6))
	for range 3 {
		require.Equal(t, "r3", connect(t, h.addr("ro")).backend)
	}
	var more []*client
	for range 3 {
		more = append(more, connect(t, h.addr("ro")))
	}
	require.Equal(t, map[string]int{"r1": 1, "r2": 1, "r3": 1}, tally(more))
}

func TestExactlyOnePrimary(t *testing.T) {
	t.Parallel()
	l1, l2, r := newEcho(t, "l1"), newEcho(t, "l2"), newEcho(t, "r")
	h := newHarness(t, ports("master", roles(leader), "replicas", roles(async)),
		l1.member(patroni.RoleLeader), l2.member(patroni.RoleReplica), r.member(patroni.RoleReplica))
	onL1 := connect(t, h.addr("master"))
	require.Equal(t, "l1", onL1.backend)
	ro, roL2 := connect(t, h.addr("replicas")), connect(t, h.addr("replicas"))
	if ro.backend == "l2" {
		ro, roL2 = roL2, ro
	}
	require.Equal(t, "r", ro.backend)
	require.Equal(t, "l2", roL2.backend)

	// Two leaders: new connections on the write port are refused; the
	// existing one stays because l1 kept its role. The replica port is
	// not affected.
	h.update(l1.member(patroni.RoleLeader), l2.member(patroni.RoleLeader), r.member(patroni.RoleReplica))
	refused(t, h.addr("master"))
	require.Equal(t, 1.0, h.refusedCount("master", ReasonMultipleLeaders))
	onL1.alive()
	ro.alive()
	roL2.closed() // l2 is no replica any more: the replica port cuts it
	require.Equal(t, "r", connect(t, h.addr("replicas")).backend)

	// No leader, l1 still "leader" but crashed: refused, and l1's
	// connections are cut because l1 left the running state.
	crashed := l1.member(patroni.RoleLeader)
	crashed.State = patroni.StateCrashed
	h.update(crashed, l2.member(patroni.RoleReplica), r.member(patroni.RoleReplica))
	refused(t, h.addr("master"))
	require.Equal(t, 1.0, h.refusedCount("master", ReasonNoLeader))
	onL1.closed()
	h.waitCut("master", ReasonNotServing, 1.0)
	ro.alive()

	// Exactly one leader again (l2): the port reopens and routes there.
	h.update(l1.member(patroni.RoleReplica), l2.member(patroni.RoleLeader), r.member(patroni.RoleReplica))
	onL2 := connect(t, h.addr("master"))
	require.Equal(t, "l2", onL2.backend)

	// Switchover to l1 with a moment of zero leaders: l2 loses the role,
	// so its connection on the write port is cut; replica sessions stay.
	h.update(l1.member(patroni.RoleReplica), l2.member(patroni.RoleReplica), r.member(patroni.RoleReplica))
	refused(t, h.addr("master"))
	onL2.closed()
	h.waitCut("master", ReasonRoleLost, 1.0)
	ro.alive()
	h.update(l1.member(patroni.RoleLeader), l2.member(patroni.RoleReplica), r.member(patroni.RoleReplica))
	require.Equal(t, "l1", connect(t, h.addr("master")).backend)
}

func TestLagCutoff(t *testing.T) {
	t.Parallel()
	l, r1, r2 := newEcho(t, "l"), newEcho(t, "r1"), newEcho(t, "r2")
	p := roles(async)
	p.MaxLagInBytes = 1000
	h := newHarness(t, ports("ro", p, "master", roles(leader)), l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica), r2.member(patroni.RoleReplica))
	var cs []*client
	for range 4 {
		cs = append(cs, connect(t, h.addr("ro")))
	}
	require.Equal(t, map[string]int{"r1": 2, "r2": 2}, tally(cs))
	rw := connect(t, h.addr("master"))

	lagging := r2.member(patroni.RoleReplica)
	lagging.Lag = 1001
	leaderLag := l.member(patroni.RoleLeader)
	leaderLag.Lag = 1 << 30 // a leader is never cut for lag
	h.update(leaderLag, r1.member(patroni.RoleReplica), lagging)
	for _, c := range cs {
		if c.backend == "r2" {
			c.closed()
		} else {
			c.alive()
		}
	}
	rw.alive()
	h.waitCut("ro", ReasonLagExceeded, 2.0)
	for range 3 {
		require.Equal(t, "r1", connect(t, h.addr("ro")).backend)
	}

	// Exactly at the limit is fine.
	lagging.Lag = 1000
	h.update(l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica), lagging)
	require.Equal(t, "r2", connect(t, h.addr("ro")).backend)
}

func TestNoLoadBalance(t *testing.T) {
	t.Parallel()
	l, r1, r2 := newEcho(t, "l"), newEcho(t, "r1"), newEcho(t, "r2")
	tagged := func(m patroni.Member) patroni.Member {
		m.Tags = patroni.Tags{NoLoadBalance: true, Raw: map[string]any{"noloadbalance": true}}
		return m
	}
	h := newHarness(t, ports("ro", roles(async)), l.member(patroni.RoleLeader), tagged(r1.member(patroni.RoleReplica)), r2.member(patroni.RoleReplica))
	var cs []*client
	for range 4 {
		cs = append(cs, connect(t, h.addr("ro")))
	}
	require.Equal(t, map[string]int{"r2": 4}, tally(cs))

	// Tagging r2 while it has connections: they stay, new ones are refused.
	h.update(l.member(patroni.RoleLeader), tagged(r1.member(patroni.RoleReplica)), tagged(r2.member(patroni.RoleReplica)))
	for _, c := range cs {
		c.alive()
	}
	refused(t, h.addr("ro"))
	require.Equal(t, 1.0, h.refusedCount("ro", ReasonNoBackends))
}

func TestRemoveMemberCutsOnlyItsConnections(t *testing.T) {
	t.Parallel()
	l, r1, r2 := newEcho(t, "l"), newEcho(t, "r1"), newEcho(t, "r2")
	h := newHarness(t, ports("ro", roles(async), "master", roles(leader)),
		l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica), r2.member(patroni.RoleReplica))
	var cs []*client
	for range 6 {
		cs = append(cs, connect(t, h.addr("ro")))
	}
	rw := connect(t, h.addr("master"))
	require.Equal(t, map[string]int{"r1": 3, "r2": 3}, tally(cs))

	h.update(l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica))
	for _, c := range cs {
		if c.backend == "r2" {
			c.closed()
		} else {
			c.alive()
		}
	}
	rw.alive()
	h.waitCut("ro", ReasonMemberGone, 3.0)
	require.Eventually(t, func() bool { return r2.active.Load() == 0 }, waitFor, time.Millisecond, "server side of r2 closed too")
	require.EqualValues(t, 3, r1.active.Load())
	require.Equal(t, map[string]int{"r1": 3}, h.backendCounts("ro", 3))

	// Unrelated changes (timeline, tags, a new stopped member) cut nothing.
	changed := l.member(patroni.RoleLeader)
	changed.Timeline = 9
	changed.Tags = patroni.Tags{Raw: map[string]any{"zone": "b"}}
	stopped := r2.member(patroni.RoleReplica)
	stopped.State = patroni.StateStopped
	h.update(changed, r1.member(patroni.RoleReplica), stopped)
	for _, c := range cs {
		if c.backend == "r1" {
			c.alive()
		}
	}
	rw.alive()
}

func TestConnectFailsOverToAnotherBackend(t *testing.T) {
	t.Parallel()
	l, r1 := newEcho(t, "l"), newEcho(t, "r1")
	dead := newEcho(t, "dead")
	deadMember := dead.member(patroni.RoleReplica)
	require.NoError(t, dead.ln.Close()) // connection refused from now on
	h := newHarness(t, ports("ro", roles(async)), l.member(patroni.RoleLeader), deadMember, r1.member(patroni.RoleReplica))
	for range 4 {
		require.Equal(t, "r1", connect(t, h.addr("ro")).backend)
	}
	errs := testutil.ToFloat64(h.proxy.env.metrics.ConnectErrors.WithLabelValues("c", "ro", portAddrString(dead.port)))
	require.GreaterOrEqual(t, errs, 1.0)

	// With only the dead one left, the client is refused.
	h.update(l.member(patroni.RoleLeader), deadMember)
	refused(t, h.addr("ro"))
	require.GreaterOrEqual(t, h.refusedCount("ro", ReasonConnectFailed), 1.0)
}

func TestHalfClose(t *testing.T) {
	t.Parallel()
	l := newEcho(t, "l")
	h := newHarness(t, ports("master", roles(leader)), l.member(patroni.RoleLeader))
	c := connect(t, h.addr("master"))
	c.alive()
	require.NoError(t, c.conn.(*net.TCPConn).CloseWrite())
	rest, err := io.ReadAll(c.r)
	require.NoError(t, err)
	require.Equal(t, "bye", string(rest), "the backend's answer after our EOF must arrive")
	require.Equal(t, map[string]int{}, h.backendCounts("master", 0))
}
