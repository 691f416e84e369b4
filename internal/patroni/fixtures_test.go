package patroni_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

const fixtureDir = "testdata/patroni-3.0.2"

func readFixture(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, rel))
	require.NoError(t, err)
	return b
}

func parseFixture(t *testing.T, rel string) *patroni.Cluster {
	t.Helper()
	c, err := patroni.ParseCluster(readFixture(t, rel))
	require.NoError(t, err, rel)
	return c
}

// memberSummary is what the fixture tables compare: name -> role/state/lag.
type memberSummary struct {
	Role     patroni.Role
	State    patroni.State
	Timeline int
	Lag      int64
	LagKnown bool
}

func summarize(c *patroni.Cluster) map[string]memberSummary {
	out := make(map[string]memberSummary, len(c.Members))
	for _, m := range c.Members {
		out[m.Name] = memberSummary{m.Role, m.State, m.Timeline, m.Lag, m.LagKnown}
	}
	return out
}

func run(tl int) memberSummary { // shorthand: a running leader
	return memberSummary{patroni.RoleLeader, patroni.StateRunning, tl, 0, true}
}

func rep(role patroni.Role, tl int, lag int64) memberSummary {
	return memberSummary{role, patroni.StateRunning, tl, lag, true}
}

func TestFixtureClusterFiles(t *testing.T) {
	t.Parallel()
	R, S := patroni.RoleReplica, patroni.RoleSyncStandby
	tests := []struct {
		dir     string
		pause   bool
		members map[string]memberSummary
	}{
		{"a_async_healthy", false, map[string]memberSummary{"node1": run(1), "node2": rep(R, 1, 0), "node3": rep(R, 1, 0)}},
		{"b_sync_mode", false, map[string]memberSummary{"node1": run(1), "node2": rep(R, 1, 0), "node3": rep(S, 1, 0)}},
		{"c_after_switchover", false, map[string]memberSummary{"node1": rep(R, 2, 0), "node2": run(2), "node3": rep(R, 2, 0)}},
		{"d1_after_crash_restart", false, map[string]memberSummary{"node1": run(5), "node2": rep(R, 5, 0), "node3": rep(R, 5, 0)}},
		// node loss: the dead node2 has vanished from members.
		{"d3_after_node_loss", false, map[string]memberSummary{"node1": rep(R, 7, 0), "node3": run(7)}},
		{"d_after_failover", false, map[string]memberSummary{"node1": rep(R, 6, 0), "node2": run(6), "node3": rep(R, 6, 0)}},
		{"e_paused", true, map[string]memberSummary{"node1": rep(R, 7, 0), "node2": rep(R, 7, 0), "node3": run(7)}},
		// paused + leader's postgres down: no leader at all, lag "unknown", no timeline.
		{"e_paused_leader_pg_down", true, map[string]memberSummary{
			"node1": rep(R, 7, 0), "node2": rep(R, 7, 0),
			"node3": {R, patroni.StateStopped, 0, 0, false},
		}},
		// replay paused: /cluster lag uses max(received, replayed), so it stays 0.
		{"f1_replay_paused", true, map[string]memberSummary{"node1": rep(R, 8, 0), "node2": run(8), "node3": rep(R, 8, 0)}},
		{"f2_walreceiver_stopped", false, map[string]memberSummary{"node1": rep(R, 8, 16605592), "node2": run(8), "node3": rep(R, 8, 0)}},
		{"timing_rerun/c_after_switchover", false, map[string]memberSummary{"node1": run(10), "node2": rep(R, 10, 0), "node3": rep(R, 10, 0)}},
		{"timing_rerun/d1_after_crash_restart", false, map[string]memberSummary{"node1": rep(R, 15, 0), "node2": rep(R, 15, 0), "node3": run(15)}},
		{"timing_rerun/d3_after_node_loss", false, map[string]memberSummary{"node1": rep(R, 17, 0), "node3": run(17)}},
		{"timing_rerun/d_after_failover", false, map[string]memberSummary{"node1": rep(R, 16, 0), "node2": run(16), "node3": rep(R, 16, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			t.Parallel()
			c := parseFixture(t, filepath.Join(tt.dir, "cluster.json"))
			require.Equal(t, tt.members, summarize(c))
			require.Equal(t, tt.pause, c.Pause)
			require.Empty(t, c.Scope, "Patroni 3.0.2 sends no scope")
			require.Nil(t, c.ScheduledSwitchover)
			for _, m := range c.Members {
				require.Equal(t, "127.0.0.1", m.Host)
				require.Equal(t, "127.0.0.1:"+strconv.Itoa(m.Port), m.Addr())
				require.Regexp(t, `^http://127\.0\.0\.1:180(08|09|10)/patroni$`, m.APIURL)
				require.Equal(t, "z"+m.Name[len(m.Name)-1:], m.Tags.Raw["zone"])
				require.True(t, m.Serving() == (m.State == patroni.StateRunning))
			}
			wantLeaders := 0
			for _, s := range tt.members {
				if s.Role == patroni.RoleLeader {
					wantLeaders++
				}
			}
			require.Len(t, c.Leaders(), wantLeaders)
		})
	}
}

// TestFixtureSnapshots checks that each node's own view in snapshot.json
// parses and matches cluster.json; a node whose API was down has an error.
func TestFixtureSnapshots(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*", "snapshot.json"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(fixtureDir, "timing_rerun", "*", "snapshot.json"))
	require.NoError(t, err)
	files = append(files, more...)
	require.Len(t, files, 14)
	for _, f := range files {
		rel, err := filepath.Rel(fixtureDir, f)
		require.NoError(t, err)
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			var snap struct {
				Nodes map[string]struct {
					Cluster json.RawMessage `json:"cluster"`
				} `json:"nodes"`
			}
			require.NoError(t, json.Unmarshal(readFixture(t, rel), &snap))
			want := parseFixture(t, filepath.Join(filepath.Dir(rel), "cluster.json"))
			down := 0
			for name, n := range snap.Nodes {
				got, err := patroni.ParseCluster(n.Cluster)
				if err != nil {
					// Only the node lost in d3 could not answer; its view is {"error": ...}.
					require.ErrorIs(t, err, patroni.ErrNotCluster, name)
					down++
					continue
				}
				require.Equal(t, want, got, name)
			}
			wantDown := 0
			if filepath.Base(filepath.Dir(rel)) == "d3_after_node_loss" {
				wantDown = 1
			}
			require.Equal(t, wantDown, down)
		})
	}
}

func TestFixtureLagSamples(t *testing.T) {
	t.Parallel()
	var doc struct {
		F1 []struct {
			Member       patroni.Member `json:"cluster_member"`
			ReplicaLag1M int            `json:"replica_lag_1MB"`
		} `json:"f1_samples"`
		F2 []struct {
			Member       patroni.Member `json:"cluster_member"`
			ReplicaLag1M int            `json:"replica_lag_1MB"`
		} `json:"f2_samples"`
	}
	require.NoError(t, json.Unmarshal(readFixture(t, "f_lag/lag_samples.json"), &doc))
	require.NotEmpty(t, doc.F1)
	require.NotEmpty(t, doc.F2)
	for _, s := range doc.F1 {
		// replay paused: /cluster says 0 while /replica?lag=1MB says 503.
		require.Equal(t, patroni.RoleReplica, s.Member.Role)
		require.True(t, s.Member.LagKnown)
		require.Zero(t, s.Member.Lag)
		require.Equal(t, 503, s.ReplicaLag1M)
	}
	for _, s := range doc.F2 {
		// walreceiver stopped after 16 MB were written: both views see it.
		require.True(t, s.Member.LagKnown)
		require.Greater(t, s.Member.Lag, int64(16<<20)-(1<<20))
		require.Equal(t, 503, s.ReplicaLag1M)
	}
}
