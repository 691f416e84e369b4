package proxy

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

// The end-to-end test runs against a real 3-node Patroni cluster from
// ../shared/patroni-sandbox with NODE_IPS=1 (nodeN on 127.0.1.N, one
// host_port for all). It runs only with PATRONI_E2E=1 and needs the Debian
// packages patroni, etcd-server and etcd-client (apt-get install -y patroni
// etcd-server etcd-client). PATRONI_SANDBOX overrides the sandbox folder;
// PATRONI_E2E_KEEP=1 leaves the cluster running afterwards.
const (
	e2eBase    = "/tmp/proxy-e2e-sbx"
	e2ePGPort  = 25432
	e2eAPIPort = 28008
)

func sandboxEnv() []string {
	return append(os.Environ(), "NODE_IPS=1", "PATRONI_SANDBOX_DIR="+e2eBase,
		"ETCD_CLIENT_PORT=22379", "ETCD_PEER_PORT=22380",
		fmt.Sprintf("PG_PORT_BASE=%d", e2ePGPort), fmt.Sprintf("API_PORT_BASE=%d", e2eAPIPort))
}

func sandboxScript(t *testing.T, ctx context.Context, name string, args ...string) string {
	t.Helper()
	dir := os.Getenv("PATRONI_SANDBOX")
	if dir == "" {
		dir = "../../../shared/patroni-sandbox"
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, name), args...)
	cmd.Env = sandboxEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v:\n%s", name, args, out)
	return string(out)
}

func e2eQuery(ctx context.Context, addr net.Addr, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	a := addr.(*net.TCPAddr)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=app password=app dbname=app sslmode=disable connect_timeout=2", a.IP, a.Port))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var s string
	err = conn.QueryRow(ctx, sql).Scan(&s)
	return s, err
}

func TestE2EPatroniSwitchover(t *testing.T) {
	if os.Getenv("PATRONI_E2E") != "1" {
		t.Skip("set PATRONI_E2E=1 to run against a real Patroni sandbox")
	}
	for _, bin := range []string{"patroni", "patronictl", "etcd"} {
		_, err := exec.LookPath(bin)
		require.NoError(t, err, "apt-get install -y patroni etcd-server etcd-client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Log(lastLine(sandboxScript(t, ctx, "up.sh")))
	if os.Getenv("PATRONI_E2E_KEEP") != "1" {
		t.Cleanup(func() { sandboxScript(t, context.Background(), "down.sh") })
	}

	var hosts []string
	for i := 1; i <= 3; i++ {
		hosts = append(hosts, fmt.Sprintf("http://127.0.1.%d:%d", i, e2eAPIPort))
	}
	cfg := &proxyconfig.Config{
		ClusterUpdateInterval: 500 * time.Millisecond, ListenAddress: "127.0.0.1:0",
		ConnectTimeout: 2 * time.Second, PatroniTimeout: time.Second, MaxTopologyAge: 30 * time.Second, ShutdownTimeout: time.Second,
		Clusters: map[string]proxyconfig.Cluster{"sbx": {Hosts: hosts, Ports: map[string]proxyconfig.Port{
			"master":   {Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{leader}, HostPort: e2ePGPort},
			"replicas": {Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{syncR, async}, HostPort: e2ePGPort},
		}}},
	}
	p := New(cfg, Options{Logger: zaptest.NewLogger(t)})
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	require.NoError(t, p.Refresh(ctx))
	master, replicas := p.PortAddr("sbx", "master"), p.PortAddr("sbx", "replicas")

	for range 5 {
		rec, err := e2eQuery(ctx, master, "SELECT pg_is_in_recovery()::text")
		require.NoError(t, err)
		require.Equal(t, "false", rec, "master port must reach the primary")
		rec, err = e2eQuery(ctx, replicas, "SELECT pg_is_in_recovery()::text")
		require.NoError(t, err)
		require.Equal(t, "true", rec, "replicas port must reach a replica")
	}
	createTable(t, ctx, master)

	client, err := patroni.NewClient(hosts, patroni.ClientOptions{})
	require.NoError(t, err)
	cl, _, err := client.FetchCluster(ctx)
	require.NoError(t, err)
	require.Len(t, cl.Leaders(), 1)
	old := cl.Leaders()[0]
	var candidate patroni.Member
	for _, m := range cl.Members {
		if m.Name != old.Name {
			candidate = m
			break
		}
	}

	// A session held on the master port, on the old leader.
	a := master.(*net.TCPAddr)
	held, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=app password=app dbname=app sslmode=disable", a.IP, a.Port))
	require.NoError(t, err)
	defer held.Close(context.Background())
	var srvAddr string
	require.NoError(t, held.QueryRow(ctx, "SELECT host(inet_server_addr())").Scan(&srvAddr))
	require.Equal(t, old.Host, srvAddr)

	start := time.Now()
	swDone := make(chan string, 1)
	go func() {
		cmd := exec.CommandContext(ctx, "/usr/bin/patronictl", "-c", e2eBase+"/node1/patroni.yml", "switchover", "--candidate", candidate.Name, "--force")
		out, err := cmd.CombinedOutput()
		swDone <- fmt.Sprintf("%s err=%v", out, err)
	}()
	var firstWrite time.Duration
	violations := 0
	for firstWrite == 0 && time.Since(start) < 2*time.Minute {
		host, err := e2eQuery(ctx, master, "INSERT INTO proxy_e2e DEFAULT VALUES RETURNING host(inet_server_addr())")
		switch {
		case err == nil && host == candidate.Host:
			firstWrite = time.Since(start)
		case err != nil && strings.Contains(err.Error(), "read-only transaction"):
			violations++ // routed to a node already in recovery
		}
		if firstWrite == 0 {
			time.Sleep(20 * time.Millisecond) // pacing of the write probe, not synchronisation
		}
	}
	t.Logf("patronictl: %s", strings.TrimSpace(<-swDone))
	require.NotZero(t, firstWrite, "no write reached the new leader %s", candidate.Name)
	t.Logf("switchover %s -> %s: first successful write through the proxy after %s; writes routed to a read-only node during the switch: %d",
		old.Name, candidate.Name, firstWrite.Round(time.Millisecond), violations)

	// The old leader's session on the master port is gone.
	require.Eventually(t, func() bool {
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		defer qcancel()
		var x int
		return held.QueryRow(qctx, "SELECT 1").Scan(&x) != nil
	}, 30*time.Second, 100*time.Millisecond, "the session on the old leader must be closed")

	for range 5 {
		rec, err := e2eQuery(ctx, master, "SELECT pg_is_in_recovery()::text")
		require.NoError(t, err)
		require.Equal(t, "false", rec)
	}
}

func createTable(t *testing.T, ctx context.Context, master net.Addr) {
	t.Helper()
	a := master.(*net.TCPAddr)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=app password=app dbname=app sslmode=disable", a.IP, a.Port))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS proxy_e2e (at timestamptz DEFAULT now())")
	require.NoError(t, err)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
