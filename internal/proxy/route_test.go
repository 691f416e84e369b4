package proxy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

func fixture(t *testing.T, rel string) *patroni.Cluster {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "patroni", "testdata", rel))
	require.NoError(t, err)
	c, err := patroni.ParseCluster(b)
	require.NoError(t, err)
	return c
}

func mem(name string, role patroni.Role, state patroni.State, port int) patroni.Member {
	return patroni.Member{Name: name, Role: role, State: state, Host: "127.0.0.1", Port: port, Lag: 0, LagKnown: true}
}

func withLag(m patroni.Member, lag int64, known bool) patroni.Member {
	m.Lag, m.LagKnown = lag, known
	return m
}

func noLB(m patroni.Member) patroni.Member {
	m.Tags = patroni.Tags{NoLoadBalance: true, Raw: map[string]any{"noloadbalance": true}}
	return m
}

func spec(roles ...proxyconfig.Role) PortSpec { return PortSpec{Cluster: "c", Name: "p", Roles: roles} }

func addrs(ts []Target) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Addr)
	}
	return out
}

const (
	leader = proxyconfig.RoleLeader
	syncR  = proxyconfig.RoleSync
	async  = proxyconfig.RoleAsync
	anyR   = proxyconfig.RoleAny
)

func TestNewPlan(t *testing.T) {
	t.Parallel()
	L := mem("n1", patroni.RoleLeader, patroni.StateRunning, 1)
	S := mem("n2", patroni.RoleSyncStandby, patroni.StateStreaming, 2)
	A := mem("n3", patroni.RoleReplica, patroni.StateStreaming, 3)
	A4 := mem("n4", patroni.RoleReplica, patroni.StateRunning, 4)
	Q := mem("n5", patroni.RoleQuorumStandby, patroni.StateStreaming, 5)
	tests := []struct {
		name     string
		members  []patroni.Member
		spec     PortSpec
		refuse   Reason
		eligible []string
		keep     []string
		drop     map[string]Reason
	}{
		{"leader port routes to the leader", []patroni.Member{L, S, A}, spec(leader),
			"", []string{"127.0.0.1:1"}, []string{"127.0.0.1:1"},
			map[string]Reason{"127.0.0.1:2": ReasonRoleLost, "127.0.0.1:3": ReasonRoleLost}},
		{"sync port takes sync and quorum standbys", []patroni.Member{L, S, A, Q}, spec(syncR),
			"", []string{"127.0.0.1:2", "127.0.0.1:5"}, []string{"127.0.0.1:2", "127.0.0.1:5"}, nil},
		{"async port: replicas running (3.0) or streaming (3.0.4+)", []patroni.Member{L, S, A, A4}, spec(async),
			"", []string{"127.0.0.1:3", "127.0.0.1:4"}, []string{"127.0.0.1:3", "127.0.0.1:4"}, nil},
		{"any port with one leader", []patroni.Member{L, S, A}, spec(anyR),
			"", []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, nil},
		{"no leader: write port refuses", []patroni.Member{S, A}, spec(leader),
			ReasonNoLeader, nil, nil, nil},
		{"leader not serving: write port refuses and the leader is dropped",
			[]patroni.Member{mem("n1", patroni.RoleLeader, patroni.StateCrashed, 1), A}, spec(leader),
			ReasonNoLeader, nil, nil, map[string]Reason{"127.0.0.1:1": ReasonNotServing}},
		{"two leaders: write port refuses, both keep their connections",
			[]patroni.Member{L, mem("n9", patroni.RoleLeader, patroni.StateRunning, 9)}, spec(leader),
			ReasonMultipleLeaders, nil, []string{"127.0.0.1:1", "127.0.0.1:9"}, nil},
		{"two leaders: leader+async port still refuses", []patroni.Member{L, mem("n9", patroni.RoleLeader, patroni.StateRunning, 9), A},
			spec(leader, async), ReasonMultipleLeaders, []string{"127.0.0.1:3"}, []string{"127.0.0.1:1", "127.0.0.1:3", "127.0.0.1:9"}, nil},
		{"two leaders: any port leaves leaders out", []patroni.Member{L, mem("n9", patroni.RoleLeader, patroni.StateRunning, 9), A},
			spec(anyR), "", []string{"127.0.0.1:3"}, []string{"127.0.0.1:1", "127.0.0.1:3", "127.0.0.1:9"}, nil},
		{"noloadbalance: no new connections, existing ones kept", []patroni.Member{L, noLB(A), A4}, spec(async),
			"", []string{"127.0.0.1:4"}, []string{"127.0.0.1:3", "127.0.0.1:4"}, nil},
		{"only noloadbalance members: no backends", []patroni.Member{L, noLB(A)}, spec(async),
			ReasonNoBackends, nil, []string{"127.0.0.1:3"}, nil},
		{"lag over the limit is dropped", []patroni.Member{L, withLag(A, 101, true), withLag(A4, 100, true)},
			PortSpec{Roles: []proxyconfig.Role{async}, MaxLag: 100},
			"", []string{"127.0.0.1:4"}, []string{"127.0.0.1:4"}, map[string]Reason{"127.0.0.1:3": ReasonLagExceeded}},
		{"unknown lag with a limit: kept but not eligible", []patroni.Member{L, withLag(A, 0, false)},
			PortSpec{Roles: []proxyconfig.Role{async}, MaxLag: 100},
			ReasonNoBackends, nil, []string{"127.0.0.1:3"}, nil},
		{"lag without a limit is ignored", []patroni.Member{L, withLag(A, 1<<40, true)}, spec(async),
			"", []string{"127.0.0.1:3"}, []string{"127.0.0.1:3"}, nil},
		{"leader is never excluded by lag", []patroni.Member{withLag(L, 1000, true)}, PortSpec{Roles: []proxyconfig.Role{leader}, MaxLag: 1},
			"", []string{"127.0.0.1:1"}, []string{"127.0.0.1:1"}, nil},
		{"stopped, starting and crashed are not serving",
			[]patroni.Member{L, mem("a", patroni.RoleReplica, patroni.StateStopped, 10), mem("b", patroni.RoleReplica, patroni.StateStarting, 11),
				mem("c", patroni.RoleReplica, patroni.StateCrashed, 12)}, spec(async),
			ReasonNoBackends, nil, nil,
			map[string]Reason{"127.0.0.1:10": ReasonNotServing, "127.0.0.1:11": ReasonNotServing, "127.0.0.1:12": ReasonNotServing}},
		{"host_port overrides the member's port", []patroni.Member{L}, PortSpec{Roles: []proxyconfig.Role{leader}, HostPort: 6432},
			"", []string{"127.0.0.1:6432"}, []string{"127.0.0.1:6432"}, nil},
		{"host_port mapping two members onto one address fails closed", []patroni.Member{L, A},
			PortSpec{Roles: []proxyconfig.Role{anyR}, HostPort: 5432}, ReasonNoBackends, nil, nil,
			map[string]Reason{"127.0.0.1:5432": ReasonAddrClash}},
		{"member without host is skipped", []patroni.Member{L, {Name: "x", Role: patroni.RoleReplica, State: patroni.StateRunning}},
			spec(async), ReasonNoBackends, nil, nil, nil},
		{"standby_leader is not a leader", []patroni.Member{mem("s", patroni.RoleStandbyLeader, patroni.StateRunning, 7)}, spec(leader),
			ReasonNoLeader, nil, nil, map[string]Reason{"127.0.0.1:7": ReasonRoleLost}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := NewPlan(&patroni.Cluster{Members: tt.members}, tt.spec, true)
			require.Equal(t, tt.refuse, p.Refuse)
			if tt.eligible == nil {
				tt.eligible = []string{}
			}
			require.Equal(t, tt.eligible, addrs(p.Eligible))
			keep := map[string]bool{}
			for _, a := range tt.keep {
				keep[a] = true
			}
			require.Equal(t, keep, p.Keep)
			for a, r := range tt.drop {
				require.Equal(t, r, p.CutReason(a), a)
			}
		})
	}
}

func TestNewPlanFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		spec     PortSpec
		refuse   Reason
		eligible []string
	}{
		{"patroni-3.0.2/a_async_healthy/cluster.json", spec(leader), "", []string{"127.0.0.1:15432"}},
		{"patroni-3.0.2/a_async_healthy/cluster.json", spec(syncR, async), "", []string{"127.0.0.1:15433", "127.0.0.1:15434"}},
		{"patroni-3.0.2/b_sync_mode/cluster.json", spec(syncR), "", nil},
		{"patroni-3.0.2/e_paused_leader_pg_down/cluster.json", spec(leader), ReasonNoLeader, []string{}},
		{"patroni-3.0.2/e_paused_leader_pg_down/cluster.json", spec(async), "", []string{"127.0.0.1:15432", "127.0.0.1:15433"}},
		{"synthetic/patroni4_quorum.json", spec(syncR), "", []string{"10.0.0.2:5432"}},
		// pg3 is "in archive recovery" (serving) but noloadbalance; pg4 stopped.
		{"synthetic/patroni4_quorum.json", spec(async), ReasonNoBackends, []string{}},
		{"synthetic/patroni4_quorum.json", PortSpec{Roles: []proxyconfig.Role{leader}, HostPort: 6432}, "", []string{"10.0.0.1:6432"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			p := NewPlan(fixture(t, tt.file), tt.spec, true)
			require.Equal(t, tt.refuse, p.Refuse)
			if tt.eligible != nil {
				require.Equal(t, tt.eligible, addrs(p.Eligible))
			} else {
				require.NotEmpty(t, p.Eligible)
			}
		})
	}
}

func TestNewPlanNilCluster(t *testing.T) {
	t.Parallel()
	require.Equal(t, ReasonNoTopology, NewPlan(nil, spec(leader), true).Refuse)
}

// TestNewPlanLeaderInRecovery: while the leader's own API has not confirmed
// its promotion, a write port refuses new connections but cuts none, and a
// port for any role still sends reads to it.
func TestNewPlanLeaderInRecovery(t *testing.T) {
	t.Parallel()
	L := mem("n1", patroni.RoleLeader, patroni.StateRunning, 1)
	S := mem("n2", patroni.RoleSyncStandby, patroni.StateStreaming, 2)
	c := &patroni.Cluster{Members: []patroni.Member{L, S}}

	w := NewPlan(c, spec(leader), false)
	require.Equal(t, ReasonLeaderInRecovery, w.Refuse)
	require.Equal(t, map[string]bool{"127.0.0.1:1": true}, w.Keep)
	require.Equal(t, ReasonNone, NewPlan(c, spec(leader), true).Refuse)

	a := NewPlan(c, spec(anyR), false)
	require.Equal(t, ReasonNone, a.Refuse)
	require.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, addrs(a.Eligible))

	// With no leader at all the older reason wins.
	require.Equal(t, ReasonNoLeader, NewPlan(&patroni.Cluster{Members: []patroni.Member{S}}, spec(leader), false).Refuse)
}
