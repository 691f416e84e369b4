package proxy

import (
	"github.com/doorman-go/doorman/internal/patroni"
)

// A leader restarting in place (patronictl restart, or Patroni recovering a
// crashed postmaster with the default primary_start_timeout) keeps the
// leader key, but /cluster shows it starting, restarting or crashed until
// Patroni's next HA loop after postgres is up: Patroni notices with a 1 s
// pg_isready loop, then writes its member key at loop_wait. A client that
// dials postgres directly writes as soon as postgres accepts connections;
// waiting for "running" in /cluster cost the write port 1-2 s more.
//
// The port may open earlier on postgres's own word, relayed by the member's
// own GET /primary (patroni.Client.FetchLeaderStatus): while postgres is
// starting or running Patroni runs a query on a live connection for every
// such request, and reports role "master"/"primary" with a "timeline" only
// when that query succeeded and pg_is_in_recovery() was false (when the
// query fails it answers just its configured role and state, without a
// timeline). That is the evidence the switchover path already trusts
// (cluster.confirm asks /patroni, the same document), taken before
// Patroni's own bookkeeping catches up. /primary rather than /patroni:
// it answers 200 only while the member holds the leader lock in its own
// view, and without the one-second retry /patroni makes while postgres is
// down. The rule "exactly one confirmed primary" is unchanged: the member
// must be the only one holding the leader key in /cluster, and say so
// itself.
//
// What it deliberately does not accept (each one a failure mode):
//   - another member than the leader last confirmed promoted while running
//     (after a failover the new leader is running when it promotes; a new
//     leader that is "starting" is rare and waits for Patroni);
//   - "stopping"/"stopped" in /cluster, or "restarting" in /patroni: Patroni
//     is taking postgres down (a restart's first half, a demotion, a
//     shutdown), and a query that still succeeds then says nothing about the
//     next seconds;
//   - a member that does not hold the leader lock in its own view (/primary
//     503) or saw no leader key (cluster_unlocked);
//   - a timeline older than the newest seen in the cluster: a primary from
//     an older history (restored or not rewound) is not the one clients
//     wrote to;
//   - no api_url: nothing to ask.
//
// The confirmation is remembered only while /cluster shows the leader with
// the same name and state; any change asks again, and "running" goes back
// to the switchover path (which asks /patroni once more). Until confirmed
// the leader is asked at leaderRecheck (100 ms), one GET /primary to one
// member, the bound the switchover path already has.

// lastLeader is the leader last confirmed promoted while /cluster showed it
// running, and the newest timeline seen in the cluster.
type lastLeader struct {
	name     string
	timeline int
}

// restartingLeaderState reports whether /cluster state s is one in which a
// leader keeping its key may be restarting in place.
func restartingLeaderState(s patroni.State) bool {
	switch s {
	case patroni.StateStarting, patroni.StateRestarting, patroni.StateCrashed:
		return true
	}
	return false
}

// mayAskLive reports whether the single leader l, which /cluster does not
// show serving, is a candidate for liveLeader: worth asking its own API.
func mayAskLive(l patroni.Member, last lastLeader) bool {
	return l.APIURL != "" && last.name != "" && l.Name == last.name && restartingLeaderState(l.State)
}

// liveLeader reports whether the single leader l of a /cluster answer, not
// yet shown serving there, may take writes on st, its own GET /patroni
// answer. It is a pure function; see the comment at the top of the file.
func liveLeader(l patroni.Member, last lastLeader, st patroni.MemberStatus) bool {
	switch {
	case !mayAskLive(l, last):
		return false
	case st.Role != "master" && st.Role != "primary":
		return false
	case st.State != patroni.StateStarting && st.State != patroni.StateRunning:
		return false
	case st.ClusterUnlocked:
		return false
	case st.Timeline <= 0: // the live query failed: role is only Patroni's intent
		return false
	case st.Timeline < last.timeline:
		return false
	}
	return true
}

// effectiveCluster is c as routing sees it: when live names c's leader
// (confirmed by liveLeader), that member counts as running. c is not
// modified; without live it is returned as is.
func effectiveCluster(c *patroni.Cluster, live string) *patroni.Cluster {
	if c == nil || live == "" {
		return c
	}
	out := *c
	out.Members = make([]patroni.Member, len(c.Members))
	copy(out.Members, c.Members)
	for i, m := range out.Members {
		if m.Name == live && m.Role == patroni.RoleLeader {
			out.Members[i].State = patroni.StateRunning
		}
	}
	return &out
}

// maxTimeline is the newest timeline any member of c reports (0 if none).
func maxTimeline(c *patroni.Cluster) int {
	tl := 0
	for _, m := range c.Members {
		tl = max(tl, m.Timeline)
	}
	return tl
}
