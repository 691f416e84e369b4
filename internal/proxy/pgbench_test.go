package proxy

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/testbuf"
)

func tcpPort(a net.Addr) int { return a.(*net.TCPAddr).Port }

func pgMember(name string, role patroni.Role, state patroni.State, c *pgtest.Cluster) patroni.Member {
	return patroni.Member{Name: name, Role: role, State: state, Host: c.Host, Port: c.Port, LagKnown: true, Timeline: 1}
}

// TestPgbenchSurvivesUnrelatedChanges runs pgbench -S through the replica
// port against real PostgreSQL while the topology changes around the
// replica it uses: a member appears, starts streaming, gets tagged and
// disappears, and the leader's tags and timeline change. Not one pgbench
// client may be disconnected.
func TestPgbenchSurvivesUnrelatedChanges(t *testing.T) {
	t.Parallel()
	pgbench, err := pgtest.FindBinary("pgbench")
	require.NoError(t, err, "install postgresql-15 (apt-get install postgresql-15)")
	primary := pgtest.Start(t, pgtest.Options{})
	replica := primary.AddReplica(t)
	init := exec.Command(pgbench, "-i", "-s", "1", "-q", "-h", primary.Host, "-p", strconv.Itoa(primary.Port), "-U", "postgres", "postgres")
	out, err := init.CombinedOutput()
	require.NoError(t, err, "%s", out)
	primary.WaitReplay(t, replica)

	other := newEcho(t, "node3") // a third member that pgbench must never notice
	node1 := pgMember("node1", patroni.RoleLeader, patroni.StateRunning, primary)
	node2 := pgMember("node2", patroni.RoleReplica, patroni.StateStreaming, replica)
	node3 := other.member(patroni.RoleReplica)
	node3.State = patroni.StateStopped
	h := newHarness(t, ports("replicas", roles(syncR, async), "master", roles(leader)), node1, node2, node3)

	const clients = 4
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pgbench, "-S", "-n", "-c", strconv.Itoa(clients), "-T", "5",
		"-h", "127.0.0.1", "-p", strconv.Itoa(tcpPort(h.addr("replicas"))), "-U", "postgres", "postgres")
	done := make(chan error, 1)
	var outBuf testbuf.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	require.Equal(t, map[string]int{"node2": clients}, h.backendCounts("replicas", clients))

	// Changes that concern other members only.
	node1.Timeline, node1.Tags = 2, patroni.Tags{Raw: map[string]any{"zone": "z9"}}
	h.update(node1, node2, node3)
	node3.State = patroni.StateStreaming
	node3.Tags = patroni.Tags{NoLoadBalance: true, Raw: map[string]any{"noloadbalance": true}}
	h.update(node1, node2, node3)
	node3.Role = patroni.RoleSyncStandby
	h.update(node1, node2, node3)
	h.update(node1, node2) // node3 removed
	syncNode := node2
	syncNode.Role = patroni.RoleSyncStandby // async -> sync still matches the port
	h.update(node1, syncNode)
	require.Equal(t, map[string]int{"node2": clients}, h.backendCounts("replicas", clients))

	err = <-done
	require.NoError(t, err, "pgbench failed:\n%s", outBuf.String())
	require.Contains(t, outBuf.String(), "number of transactions actually processed")
	require.NotContains(t, outBuf.String(), "aborted")
	require.Zero(t, h.cutCount("replicas", ReasonMemberGone))
	require.Zero(t, h.cutCount("replicas", ReasonRoleLost))
	t.Logf("pgbench through the replica port:\n%s", outBuf.String())
}
