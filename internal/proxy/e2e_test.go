package proxy

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/pgtest/patronisbx"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

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

// TestE2EPatroniSwitchover runs patroni_proxy against a real 3-node Patroni
// cluster started by internal/pgtest/patronisbx (nodeN on 127.0.1.N,
// PostgreSQL on one port for all, so one host_port fits every member): the
// master port reaches the primary and the replicas port a replica; during
// `patronictl switchover` a write through the master port reaches the new
// leader, the session held on the old leader is closed, and the master port
// then reaches the new primary only. It runs only with PATRONI_E2E=1 (make
// test-e2e) and needs the Debian packages patroni, etcd-server and
// etcd-client; the cluster is left running for the next test.
func TestE2EPatroniSwitchover(t *testing.T) {
	sbx := patronisbx.Up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	hosts := sbx.APIURLs()
	cfg := &proxyconfig.Config{
		ClusterUpdateInterval: 500 * time.Millisecond, ListenAddress: "127.0.0.1:0",
		ConnectTimeout: 2 * time.Second, PatroniTimeout: time.Second, MaxTopologyAge: 30 * time.Second, ShutdownTimeout: time.Second,
		Clusters: map[string]proxyconfig.Cluster{"sbx": {Hosts: hosts, Ports: map[string]proxyconfig.Port{
			"master":   {Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{leader}, HostPort: patronisbx.PGPort},
			"replicas": {Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{syncR, async}, HostPort: patronisbx.PGPort},
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

	cl := sbx.Cluster(t)
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
		out, err := sbx.Switchover(ctx, candidate.Name)
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
	lc := func(r string) float64 {
		return testutil.ToFloat64(p.env.metrics.LeaderChecks.WithLabelValues("sbx", r))
	}
	t.Logf("switchover %s -> %s: first successful write through the proxy after %s; writes routed to a read-only node during the switch: %d; "+
		"leader checks: promoted %.0f, in_recovery %.0f, error %.0f; refused leader_in_recovery %.0f",
		old.Name, candidate.Name, firstWrite.Round(time.Millisecond), violations, lc("promoted"), lc("in_recovery"), lc("error"),
		testutil.ToFloat64(p.env.metrics.Refused.WithLabelValues("sbx", "master", string(ReasonLeaderInRecovery))))
	require.Zero(t, violations, "the master port must never reach a node in recovery")
	require.GreaterOrEqual(t, lc("promoted"), 2.0, "the old and the new leader were each confirmed by their own API")

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
