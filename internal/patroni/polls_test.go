package patroni_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

// pollLine is one 100 ms tick of a *.poll.jsonl recording.
type pollLine struct {
	T          float64                    `json:"t"`
	Cluster    json.RawMessage            `json:"cluster"`
	From       string                     `json:"cluster_from"`
	OtherViews map[string]json.RawMessage `json:"other_views"`
	Primary    map[string]*int            `json:"primary"`
}

type poll struct {
	T       float64
	Cluster *patroni.Cluster
	Others  map[string]*patroni.Cluster // nil value: that node's API failed
}

func readPolls(t *testing.T, rel string) []poll {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, rel))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out []poll
	for sc.Scan() {
		var l pollLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		c, err := patroni.ParseCluster(l.Cluster)
		require.NoError(t, err, "t=%v", l.T)
		p := poll{T: l.T, Cluster: c, Others: map[string]*patroni.Cluster{}}
		for node, raw := range l.OtherViews {
			oc, err := patroni.ParseCluster(raw)
			if err != nil {
				require.ErrorIs(t, err, patroni.ErrNotCluster, "t=%v %s", l.T, node)
				require.Contains(t, string(raw), `"error"`)
			}
			p.Others[node] = oc
		}
		out = append(out, p)
	}
	require.NoError(t, sc.Err())
	return out
}

// leaderSeq compresses the per-poll leader names (filtered by keep) into the
// sequence of distinct consecutive values; "-" means no leader.
func leaderSeq(polls []poll, keep func(patroni.Member) bool) []string {
	var seq []string
	for _, p := range polls {
		var names []string
		for _, m := range p.Cluster.Leaders() {
			if keep(m) {
				names = append(names, m.Name)
			}
		}
		s := strings.Join(names, "+")
		if s == "" {
			s = "-"
		}
		if len(seq) == 0 || seq[len(seq)-1] != s {
			seq = append(seq, s)
		}
	}
	return seq
}

func TestFixturePolls(t *testing.T) {
	t.Parallel()
	sw := []patroni.State{"running", "stopping", "stopped", "starting"}
	tests := []struct {
		file          string
		lines         int
		serving       []string // leaders that are also Serving()
		leaders       []string // leaders whatever their state
		noLeader      int      // polls without any leader
		states        []patroni.State
		runningNoLag  int // non-leaders "running" with lag "unknown"
		leaderNoTLMin int // polls where the leader had no timeline, at least
	}{
		{"c_switchover/c_switchover_1_to_node2.poll.jsonl", 167, []string{"node1", "-", "node2"}, []string{"node1", "-", "node2"}, 1, sw, 0, 5},
		{"c_switchover/c_switchover_2_to_node3.poll.jsonl", 162, []string{"node2", "-", "node3"}, []string{"node2", "-", "node3"}, 1, sw, 0, 5},
		{"c_switchover/c_switchover_3_to_node1.poll.jsonl", 156, []string{"node3", "node1"}, []string{"node3", "node1"}, 0, sw, 0, 5},
		{"d_failover/d1_sigkill_postmaster_default.poll.jsonl", 112, []string{"node1", "-", "node1"}, []string{"node1"}, 0, []patroni.State{"running", "crashed", "starting"}, 0, 40},
		{"d_failover/d2_sigkill_postmaster_pst0.poll.jsonl", 108, []string{"node1", "-", "node2"}, []string{"node1", "-", "node2"}, 1, []patroni.State{"running", "stopped", "starting"}, 0, 5},
		{"d_failover/d3_node_loss.poll.jsonl", 166, []string{"node2", "-", "node3"}, []string{"node2", "-", "node3"}, 1, []patroni.State{"running"}, 0, 0},
		{"e_pause/e_resume_after_leader_pg_down.poll.jsonl", 201, []string{"-", "node2"}, []string{"-", "node2"}, 39, []patroni.State{"running", "stopped", "starting"}, 0, 0},
		{"timing_rerun/c_switchover/c_switchover_1_to_node1.poll.jsonl", 123, []string{"node2", "-", "node1"}, []string{"node2", "-", "node1"}, 2, sw, 1, 5},
		{"timing_rerun/c_switchover/c_switchover_2_to_node3.poll.jsonl", 118, []string{"node1", "-", "node3"}, []string{"node1", "-", "node3"}, 1, sw, 0, 5},
		{"timing_rerun/c_switchover/c_switchover_3_to_node1.poll.jsonl", 123, []string{"node3", "-", "node1"}, []string{"node3", "-", "node1"}, 1, sw, 0, 5},
		{"timing_rerun/c_switchover/c_switchover_4_to_node2.poll.jsonl", 119, []string{"node1", "-", "node2"}, []string{"node1", "-", "node2"}, 2, sw, 0, 5},
		{"timing_rerun/c_switchover/c_switchover_5_to_node3.poll.jsonl", 129, []string{"node2", "-", "node3"}, []string{"node2", "-", "node3"}, 1, sw, 0, 5},
		{"timing_rerun/d_failover/d1_sigkill_postmaster_default.poll.jsonl", 105, []string{"node3", "-", "node3"}, []string{"node3"}, 0, []patroni.State{"running", "crashed", "starting"}, 0, 40},
		{"timing_rerun/d_failover/d2_sigkill_postmaster_pst0.poll.jsonl", 99, []string{"node3", "-", "node2"}, []string{"node3", "-", "node2"}, 1, []patroni.State{"running", "stopped", "starting"}, 0, 5},
		{"timing_rerun/d_failover/d3_node_loss.poll.jsonl", 170, []string{"node2", "node3"}, []string{"node2", "node3"}, 0, []patroni.State{"running"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			polls := readPolls(t, tt.file)
			require.Len(t, polls, tt.lines)
			require.Equal(t, tt.serving, leaderSeq(polls, patroni.Member.Serving))
			require.Equal(t, tt.leaders, leaderSeq(polls, func(patroni.Member) bool { return true }))

			noLeader, runningNoLag, leaderNoTL := 0, 0, 0
			states := map[patroni.State]bool{}
			for _, p := range polls {
				if len(p.Cluster.Leaders()) == 0 {
					noLeader++
				}
				for _, m := range p.Cluster.Members {
					states[m.State] = true
					if m.Role != patroni.RoleLeader && m.Serving() && !m.LagKnown {
						runningNoLag++
					}
					if m.Role == patroni.RoleLeader && m.Timeline == 0 {
						leaderNoTL++
					}
				}
				views := []*patroni.Cluster{p.Cluster}
				for _, o := range p.Others {
					if o != nil {
						views = append(views, o)
					}
				}
				for _, v := range views {
					checkViewInvariants(t, p.T, v)
				}
			}
			require.Equal(t, tt.noLeader, noLeader)
			require.Equal(t, tt.runningNoLag, runningNoLag)
			require.GreaterOrEqual(t, leaderNoTL, tt.leaderNoTLMin)
			want := map[patroni.State]bool{}
			for _, s := range tt.states {
				want[s] = true
			}
			require.Equal(t, want, states)
		})
	}
}

// checkViewInvariants holds for every view of every recorded instant.
func checkViewInvariants(t *testing.T, at float64, c *patroni.Cluster) {
	t.Helper()
	require.LessOrEqual(t, len(c.Leaders()), 1, "two leaders at t=%v", at)
	for _, m := range c.Members {
		require.NotEmpty(t, m.Addr(), "t=%v %s", at, m.Name)
		require.Contains(t, []patroni.Role{patroni.RoleLeader, patroni.RoleReplica}, m.Role)
		if m.Role == patroni.RoleLeader {
			require.True(t, m.LagKnown, "leader lag is implicit 0")
			require.Zero(t, m.Lag)
		}
		if !m.LagKnown {
			// a member without WAL position never has a timeline either.
			require.Zero(t, m.Timeline, "t=%v %s", at, m.Name)
		}
	}
}

// TestFixtureNodeLossKeepsDeadLeader pins pitfall 3: after node loss the dead
// leader is still "leader/running" in /cluster for seconds while its own API
// refuses connections; it then vanishes instead of turning "stopped".
func TestFixtureNodeLossKeepsDeadLeader(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"d_failover/d3_node_loss.poll.jsonl", "timing_rerun/d_failover/d3_node_loss.poll.jsonl"} {
		polls := readPolls(t, file)
		var deadButLeader, vanished float64
		for _, p := range polls {
			m, ok := p.Cluster.Member("node2")
			view, has := p.Others["node2"]
			down := has && view == nil // node2's own API failed
			switch {
			case ok && down && m.Role == patroni.RoleLeader && m.Serving():
				deadButLeader = p.T
			case !ok && vanished == 0:
				vanished = p.T
			}
		}
		require.Greater(t, deadButLeader, 5.0, file)
		require.Greater(t, vanished, deadButLeader, file)
		last := polls[len(polls)-1].Cluster
		_, ok := last.Member("node2")
		require.False(t, ok, "the lost member disappears instead of turning stopped")
		require.Len(t, last.Members, 2)
	}
}
