package fallback

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

func member(name string, role patroni.Role, state patroni.State, host string, port int, tags map[string]any) patroni.Member {
	m := patroni.Member{Name: name, Role: role, State: state, Host: host, Port: port}
	if len(tags) > 0 {
		m.Tags.Raw = tags
		m.Tags.NoFailover = tagTrue(tags["nofailover"])
		m.Tags.NoLoadBalance = tagTrue(tags["noloadbalance"])
	}
	return m
}

func names(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestWaves(t *testing.T) {
	t.Parallel()
	cl := &patroni.Cluster{Members: []patroni.Member{
		member("leader", patroni.RoleLeader, patroni.StateRunning, "10.0.0.1", 5432, nil),
		member("replica", patroni.RoleReplica, patroni.StateStreaming, "10.0.0.2", 5432, nil),
		member("sync", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.0.3", 5432, nil),
		member("quorum", patroni.RoleQuorumStandby, patroni.StateRunning, "10.0.0.4", 5432, nil),
		member("archive-replica", patroni.RoleReplica, patroni.StateInArchiveRecovery, "10.0.0.5", 5432, nil),
		member("standby-leader", patroni.RoleStandbyLeader, patroni.StateRunning, "10.0.0.6", 5432, nil),
		member("nolb", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.1.1", 5432, map[string]any{"noloadbalance": true}),
		member("nofo", patroni.RoleReplica, patroni.StateStreaming, "10.0.1.2", 5432, map[string]any{"nofailover": "true"}),
		member("archive", patroni.RoleReplica, patroni.StateStreaming, "10.0.1.3", 5432, map[string]any{"archive": true}),
		member("archive-off", patroni.RoleReplica, patroni.StateStreaming, "10.0.1.4", 5432, map[string]any{"archive": false, "nosync": true, "clonefrom": true}),
		member("starting", patroni.RoleSyncStandby, patroni.StateStarting, "10.0.2.1", 5432, nil),
		member("stopped", patroni.RoleReplica, patroni.StateStopped, "10.0.2.2", 5432, nil),
		member("crashed", patroni.RoleLeader, patroni.StateCrashed, "10.0.2.3", 5432, nil),
		member("nohost", patroni.RoleReplica, patroni.StateStreaming, "", 5432, nil),
		member("cooling", patroni.RoleSyncStandby, patroni.StateStreaming, "10.0.3.1", 5432, nil),
	}}
	w1, w2 := Waves(cl, func(addr string) bool { return addr == "10.0.3.1:5432" })
	require.Equal(t, []string{"sync", "quorum"}, names(w1))
	require.Equal(t, []string{"leader", "replica", "archive-replica", "standby-leader", "archive-off"}, names(w2))
	require.Equal(t, Target{Network: "tcp", Address: "10.0.0.3:5432"}, w1[0].Target)

	w1, w2 = Waves(&patroni.Cluster{}, nil)
	require.Empty(t, w1)
	require.Empty(t, w2)
}

func TestWavesFromCapture(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("../patroni/testdata/patroni-3.0.2/b_sync_mode/cluster.json")
	require.NoError(t, err)
	cl, err := patroni.ParseCluster(body)
	require.NoError(t, err)
	w1, w2 := Waves(cl, nil)
	require.Equal(t, []string{"node3"}, names(w1))
	require.Equal(t, []string{"node1", "node2"}, names(w2))
	require.Equal(t, "127.0.0.1:15434", w1[0].Target.Address)
}
