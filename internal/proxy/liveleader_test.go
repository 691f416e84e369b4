package proxy

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

func TestLiveLeader(t *testing.T) {
	t.Parallel()
	leader := func(state patroni.State) patroni.Member {
		m := mem("node1", patroni.RoleLeader, state, 5432)
		m.APIURL = "http://127.0.0.1:8008/patroni"
		return m
	}
	prev := lastLeader{name: "node1", timeline: 3}
	live := patroni.MemberStatus{Role: "master", State: patroni.StateStarting, Timeline: 3}
	with := func(f func(*patroni.MemberStatus)) patroni.MemberStatus { s := live; f(&s); return s }
	tests := []struct {
		name   string
		leader patroni.Member
		last   lastLeader
		status patroni.MemberStatus
		want   bool
	}{
		{"restart in place, postgres answers out of recovery", leader(patroni.StateStarting), prev, live, true},
		{"/cluster still says restarting", leader(patroni.StateRestarting), prev, live, true},
		{"/cluster still says crashed", leader(patroni.StateCrashed), prev, live, true},
		{"patroni already says running", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.State = patroni.StateRunning }), true},
		{"role primary (Patroni 3.x)", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.Role = "primary" }), true},
		{"newer timeline", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.Timeline = 4 }), true},

		{"live query failed: role is only Patroni's intent", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.Timeline = 0 }), false},
		{"in recovery", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.Role = "replica" }), false},
		{"standby leader", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.Role = "standby_leader" }), false},
		{"older timeline", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.Timeline = 2 }), false},
		{"member saw no leader key", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.ClusterUnlocked = true }), false},
		{"patroni taking postgres down (restarting)", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.State = patroni.StateRestarting }), false},
		{"patroni says stopping", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.State = patroni.StateStopping }), false},
		{"patroni says unknown", leader(patroni.StateStarting), prev,
			with(func(s *patroni.MemberStatus) { s.State = "unknown" }), false},
		{"another member than the last confirmed leader", leader(patroni.StateStarting),
			lastLeader{name: "node2", timeline: 3}, live, false},
		{"no leader confirmed before (proxy just started)", leader(patroni.StateStarting), lastLeader{}, live, false},
		{"/cluster says stopping", leader(patroni.StateStopping), prev, live, false},
		{"/cluster says stopped", leader(patroni.StateStopped), prev, live, false},
		{"/cluster says start failed", leader(patroni.StateStartFailed), prev, live, false},
		{"no api_url", func() patroni.Member { m := leader(patroni.StateStarting); m.APIURL = ""; return m }(), prev, live, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, liveLeader(tt.leader, tt.last, tt.status))
		})
	}
}

func TestEffectiveCluster(t *testing.T) {
	t.Parallel()
	c := &patroni.Cluster{Members: []patroni.Member{
		mem("node1", patroni.RoleLeader, patroni.StateStarting, 5432),
		mem("node2", patroni.RoleReplica, patroni.StateStarting, 5433),
	}}
	require.Same(t, c, effectiveCluster(c, ""))
	e := effectiveCluster(c, "node1")
	require.Equal(t, patroni.StateRunning, e.Members[0].State)
	require.Equal(t, patroni.StateStarting, e.Members[1].State, "only the leader named")
	require.Equal(t, patroni.StateStarting, c.Members[0].State, "the input is not modified")
	require.Equal(t, patroni.StateStarting, effectiveCluster(c, "node2").Members[1].State, "a replica is never made running")

	p := NewPlan(e, spec(proxyconfig.RoleLeader), true)
	require.Equal(t, ReasonNone, p.Refuse)
	require.Equal(t, []string{"127.0.0.1:5432"}, addrs(p.Eligible))
}

// restartBody is node1's /patroni while Patroni restarts it in place: with
// timeline when its live query succeeded, without when postgres is down.
func restartBody(state string, timeline int) string {
	if timeline == 0 {
		return `{"state":"` + state + `","role":"master"}`
	}
	return `{"state":"` + state + `","role":"master","timeline":` + strconv.Itoa(timeline) + `,"xlog":{"location":1}}`
}

// routedLeader starts a master port whose only member, node1, is the
// leader on timeline 5 with its own member API, and waits until the port
// routes to it.
func routedLeader(t *testing.T) (*memberAPI, patroni.Member, *harness) {
	t.Helper()
	n1 := newEcho(t, "node1")
	api := newMemberAPI(t, "master")
	m := n1.member(patroni.RoleLeader)
	m.APIURL, m.Timeline = api.url(), 5
	h := newHarness(t, ports("master", roles(leader)), m)
	eventuallyBackend(t, h.addr("master"), "node1")
	return api, m, h
}

// restarting is leader m as /cluster shows it while Patroni restarts its
// postgres in place: starting, no timeline.
func restarting(m patroni.Member) patroni.Member {
	m.State, m.Timeline = patroni.StateStarting, 0
	return m
}

// TestWritePortOpensOnRestartedPostgres: patronictl restart of the leader.
// /cluster shows it starting until Patroni's next HA loop; the write port
// refuses while postgres is down and opens as soon as the member's own API
// relays that postgres answered out of recovery, with /cluster still saying
// starting and no further /cluster poll (the interval is an hour).
func TestWritePortOpensOnRestartedPostgres(t *testing.T) {
	t.Parallel()
	api, m, h := routedLeader(t)

	api.body.Store(restartBody("starting", 0))
	h.update(restarting(m))
	refused(t, h.addr("master"))
	require.Positive(t, h.leaderChecks("not_live"))

	api.body.Store(restartBody("starting", 5))
	require.Eventually(t, func() bool { return h.leaderChecks("live_primary") > 0 }, waitFor, 5*time.Millisecond)
	eventuallyBackend(t, h.addr("master"), "node1")
	c := connect(t, h.addr("master"))

	// Remembered while /cluster shows the same: no more asks, no cut.
	asked := h.leaderChecks("live_primary") + h.leaderChecks("not_live") + h.leaderChecks("error")
	h.refresh()
	require.Equal(t, asked, h.leaderChecks("live_primary")+h.leaderChecks("not_live")+h.leaderChecks("error"))
	c.alive()

	// Patroni catches up: back on the switchover path, connection kept.
	api.body.Store("")
	h.update(m)
	eventuallyBackend(t, h.addr("master"), "node1")
	c.alive()
}

// TestWritePortRestartedPostgresOlderTimeline: a leader that comes back on
// an older timeline than the cluster has seen stays refused until Patroni
// itself says running.
func TestWritePortRestartedPostgresOlderTimeline(t *testing.T) {
	t.Parallel()
	api, m, h := routedLeader(t)

	api.body.Store(restartBody("starting", 4))
	h.update(restarting(m))
	require.Eventually(t, func() bool { return h.leaderChecks("not_live") >= 2 }, waitFor, 5*time.Millisecond,
		"asked again at the recheck interval")
	refused(t, h.addr("master"))
	require.Zero(t, h.leaderChecks("live_primary"))
}

// TestWritePortRestartedPostgresLockNotHeld: the member's own Patroni does
// not hold the leader lock (GET /primary 503) although /cluster still names
// it: refused, whatever its postgres says.
func TestWritePortRestartedPostgresLockNotHeld(t *testing.T) {
	t.Parallel()
	api, m, h := routedLeader(t)

	api.body.Store(restartBody("starting", 5))
	api.notLeader.Store(true)
	h.update(restarting(m))
	require.Eventually(t, func() bool { return h.leaderChecks("error") >= 2 }, waitFor, 5*time.Millisecond)
	refused(t, h.addr("master"))
	require.Zero(t, h.leaderChecks("live_primary"))
}
