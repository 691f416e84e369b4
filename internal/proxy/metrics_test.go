package proxy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

func TestSetMembers(t *testing.T) {
	member := func(role patroni.Role, state patroni.State) patroni.Member {
		return patroni.Member{Role: role, State: state}
	}
	type series map[memberKey]float64
	steps := []struct {
		name    string
		members []patroni.Member
		want    series
	}{
		{"one leader", []patroni.Member{member(patroni.RoleLeader, "running")},
			series{{"leader", "running"}: 1}},
		{"switchover", []patroni.Member{member(patroni.RoleReplica, "running"), member(patroni.RoleLeader, "running")},
			series{{"leader", "running"}: 1, {"replica", "running"}: 1}},
		{"two replicas, one stopped", []patroni.Member{member(patroni.RoleLeader, "running"), member(patroni.RoleReplica, "running"), member(patroni.RoleReplica, "stopped")},
			series{{"leader", "running"}: 1, {"replica", "running"}: 1, {"replica", "stopped"}: 1}},
		{"the stopped one gone, a pair deleted", []patroni.Member{member(patroni.RoleLeader, "running"), member(patroni.RoleReplica, "running"), member(patroni.RoleReplica, "running")},
			series{{"leader", "running"}: 1, {"replica", "running"}: 2}},
		{"no members", nil, series{}},
	}
	reg := prometheus.NewRegistry()
	v := NewMetrics(reg).Members
	other := v.WithLabelValues("other", "leader", "running")
	other.Set(1)
	var prev map[memberKey]int
	for _, st := range steps {
		prev = setMembers(v, "c", prev, st.members)
		require.Len(t, prev, len(st.want), st.name)
		for k, n := range st.want {
			require.Equal(t, n, testutil.ToFloat64(v.WithLabelValues("c", k.role, k.state)), "%s: %v", st.name, k)
		}
		// Only the cluster's current pairs and the other cluster's one.
		require.Equal(t, len(st.want)+1, testutil.CollectAndCount(v), st.name)
	}
	require.Equal(t, 1.0, testutil.ToFloat64(other), "another cluster's series are left alone")
}

// TestSetMembersScrapedDuringUpdates: a scrape during an update sees every
// pair that the topologies before and after share (a switchover keeps one
// leader and one replica), never a gauge emptied and counted up again.
func TestSetMembersScrapedDuringUpdates(t *testing.T) {
	reg := prometheus.NewRegistry()
	v := NewMetrics(reg).Members
	a := []patroni.Member{{Name: "l", Role: patroni.RoleLeader, State: "running"}, {Name: "r", Role: patroni.RoleReplica, State: "running"}}
	b := []patroni.Member{{Name: "l", Role: patroni.RoleReplica, State: "running"}, {Name: "r", Role: patroni.RoleLeader, State: "running"}}
	prev := setMembers(v, "c", nil, a)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20000; i++ {
			if i%2 == 0 {
				prev = setMembers(v, "c", prev, b)
			} else {
				prev = setMembers(v, "c", prev, a)
			}
		}
	}()
	scrapes := 0
	for {
		select {
		case <-done:
			require.Positive(t, scrapes)
			return
		default:
		}
		families, err := reg.Gather()
		require.NoError(t, err)
		seen := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "patroni_proxy_members" {
				continue
			}
			for _, m := range f.GetMetric() {
				role := ""
				for _, l := range m.GetLabel() {
					if l.GetName() == "role" {
						role = l.GetValue()
					}
				}
				seen[role] = m.GetGauge().GetValue()
			}
		}
		require.Equal(t, map[string]float64{"leader": 1, "replica": 1}, seen, "scrape %d", scrapes)
		scrapes++
	}
}
