package patroni_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

func TestParseClusterSynthetic(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/synthetic/patroni4_quorum.json")
	require.NoError(t, err)
	c, err := patroni.ParseCluster(b)
	require.NoError(t, err)

	require.Equal(t, "demo", c.Scope)
	require.True(t, c.Pause)
	require.Equal(t, &patroni.ScheduledSwitchover{At: "2030-01-01T00:00:00+00:00", From: "pg1", To: "pg2"}, c.ScheduledSwitchover)
	require.Len(t, c.Members, 4)

	pg1, _ := c.Member("pg1")
	require.Equal(t, patroni.RoleLeader, pg1.Role)
	require.True(t, pg1.LagKnown)
	require.False(t, pg1.Tags.NoFailover)
	require.Equal(t, "10.0.0.1:5432", pg1.Addr())

	pg2, _ := c.Member("pg2")
	require.Equal(t, patroni.RoleQuorumStandby, pg2.Role)
	require.True(t, pg2.Role.IsSync())
	require.True(t, pg2.Role.IsReplica())
	require.True(t, pg2.Serving(), "streaming is serving")
	require.Equal(t, "0/5000148", pg2.LSN)
	require.Equal(t, "0/50000C8", pg2.ReplayLSN)
	require.True(t, pg2.ReceiveLagKnown)
	require.Zero(t, pg2.ReceiveLag)
	require.True(t, pg2.ReplayLagKnown)
	require.Equal(t, int64(128), pg2.ReplayLag)

	pg3, _ := c.Member("pg3")
	require.Equal(t, 5433, pg3.Port, "quoted port accepted")
	require.True(t, pg3.Serving(), "in archive recovery is serving")
	require.True(t, pg3.PendingRestart)
	require.False(t, pg3.ReceiveLagKnown)
	require.Equal(t, "unknown", pg3.ReceiveLSN)
	require.Equal(t, int64(4096), pg3.Lag)
	require.Equal(t, patroni.Tags{
		NoLoadBalance: true, CloneFrom: true, NoSync: true, ReplicateFrom: "pg2",
		Raw: map[string]any{"noloadbalance": "true", "clonefrom": true, "nosync": "on", "replicatefrom": "pg2", "zone": "b"},
	}, pg3.Tags)

	pg4, _ := c.Member("pg4")
	require.False(t, pg4.Serving())
	require.False(t, pg4.LagKnown)
	require.True(t, pg4.Tags.NoFailover)
	require.True(t, pg4.Tags.NoStream)
	require.Zero(t, pg4.Timeline)

	require.Equal(t, []string{"pg1"}, names(c.Leaders()))
	require.Equal(t, []string{"pg3", "pg4"}, names(c.WithRole(patroni.RoleReplica)))
	_, ok := c.Member("nope")
	require.False(t, ok)
}

func TestStandbyLeaderIsNotALeader(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/synthetic/standby_cluster.json")
	require.NoError(t, err)
	c, err := patroni.ParseCluster(b)
	require.NoError(t, err)
	require.Empty(t, c.Leaders())
	sl := c.WithRole(patroni.RoleStandbyLeader)
	require.Len(t, sl, 1)
	require.True(t, sl[0].LagKnown, "a standby_leader carries no lag")
	require.False(t, sl[0].Role.IsReplica())
}

func names(ms []patroni.Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestParseClusterMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		member string
		want   patroni.Member
	}{
		{"master is leader", `{"name":"a","role":"master","state":"running"}`,
			patroni.Member{Name: "a", Role: patroni.RoleLeader, State: "running", LagKnown: true}},
		{"primary is leader", `{"name":"a","role":"primary","state":"running"}`,
			patroni.Member{Name: "a", Role: patroni.RoleLeader, State: "running", LagKnown: true}},
		{"unknown role kept", `{"name":"a","role":"witness","state":"running","lag":3}`,
			patroni.Member{Name: "a", Role: "witness", State: "running", Lag: 3, LagKnown: true}},
		{"replica without lag is unknown", `{"name":"a","role":"replica","state":"running"}`,
			patroni.Member{Name: "a", Role: patroni.RoleReplica, State: "running"}},
		{"lag unknown", `{"name":"a","role":"replica","state":"stopped","lag":"unknown"}`,
			patroni.Member{Name: "a", Role: patroni.RoleReplica, State: "stopped"}},
		{"nulls are absent", `{"name":"a","role":"replica","state":"x","lag":null,"port":null,"timeline":null,"tags":null}`,
			patroni.Member{Name: "a", Role: patroni.RoleReplica, State: "x"}},
		{"unknown fields ignored", `{"name":"a","role":"leader","state":"running","xlog":{"a":1},"new":[1]}`,
			patroni.Member{Name: "a", Role: patroni.RoleLeader, State: "running", LagKnown: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := patroni.ParseCluster([]byte(`{"members":[` + tt.member + `]}`))
			require.NoError(t, err)
			require.Equal(t, []patroni.Member{tt.want}, c.Members)
		})
	}
}

func TestParseClusterErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"not json", `<html>`, "parse cluster"},
		{"empty", ``, "parse cluster"},
		{"array", `[]`, "cannot unmarshal array"},
		{"patroni body", `{"state":"running","role":"master"}`, "no members"},
		{"null members", `{"members":null}`, "no members"},
		{"members not array", `{"members":{}}`, "cannot unmarshal"},
		{"no name", `{"members":[{"role":"leader"}]}`, "member 0 has no name"},
		{"duplicate", `{"members":[{"name":"a"},{"name":"a"}]}`, `duplicate member "a"`},
		{"name type", `{"members":[{"name":1}]}`, "cannot unmarshal number"},
		{"lag type", `{"members":[{"name":"a","lag":true}]}`, `member "a": lag`},
		{"lag float", `{"members":[{"name":"a","lag":1.5}]}`, `member "a": lag`},
		{"port word", `{"members":[{"name":"a","port":"x"}]}`, `member "a": port`},
		{"timeline string", `{"members":[{"name":"a","timeline":"3"}]}`, `member "a": timeline`},
		{"pause type", `{"members":[],"pause":"yes"}`, "cannot unmarshal string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := patroni.ParseCluster([]byte(tt.body))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestParseClusterEmptyMembers(t *testing.T) {
	t.Parallel()
	c, err := patroni.ParseCluster([]byte(`{"members":[]}`))
	require.NoError(t, err)
	require.Empty(t, c.Members)
	require.Empty(t, c.Leaders())
}

func TestStateServing(t *testing.T) {
	t.Parallel()
	for s, want := range map[patroni.State]bool{
		"running": true, "streaming": true, "in archive recovery": true,
		"starting": false, "stopped": false, "stopping": false, "crashed": false,
		"restarting": false, "start failed": false, "creating replica": false, "": false, "unknown": false,
	} {
		require.Equal(t, want, s.Serving(), string(s))
	}
}

func TestMemberAddr(t *testing.T) {
	t.Parallel()
	require.Equal(t, "10.0.0.1:5432", patroni.Member{Host: "10.0.0.1", Port: 5432}.Addr())
	require.Equal(t, "[::1]:5432", patroni.Member{Host: "::1", Port: 5432}.Addr())
	require.Empty(t, patroni.Member{Port: 5432}.Addr(), "no host must not mean localhost")
	require.Empty(t, patroni.Member{Host: "h"}.Addr())
}

func TestClusterJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"testdata/synthetic/patroni4_quorum.json", fixtureDir + "/e_paused_leader_pg_down/cluster.json", fixtureDir + "/b_sync_mode/cluster.json"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		c1, err := patroni.ParseCluster(b)
		require.NoError(t, err)
		enc, err := json.Marshal(c1)
		require.NoError(t, err)
		c2, err := patroni.ParseCluster(enc)
		require.NoError(t, err)
		require.Equal(t, c1, c2, f)
	}
}

func FuzzParseCluster(f *testing.F) {
	for _, p := range []string{
		"testdata/synthetic/patroni4_quorum.json", "testdata/synthetic/standby_cluster.json",
		fixtureDir + "/a_async_healthy/cluster.json", fixtureDir + "/e_paused_leader_pg_down/cluster.json",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"members":[{"name":"a","port":"01","lag":-1,"timeline":0}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c1, err := patroni.ParseCluster(body)
		if err != nil {
			return
		}
		enc, err := json.Marshal(c1)
		require.NoError(t, err)
		c2, err := patroni.ParseCluster(enc)
		require.NoError(t, err, "re-encoded: %s", enc)
		require.Equal(t, c1, c2)
		for _, m := range c1.Members {
			_ = m.Addr()
			require.NotEmpty(t, m.Name)
		}
	})
}
