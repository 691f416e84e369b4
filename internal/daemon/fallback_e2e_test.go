package daemon_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/fallback"
	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/pgtest/patronisbx"
)

// End-to-end tests of pg_doorman against a real 3-node Patroni cluster
// (internal/pgtest/patronisbx). They run only with PATRONI_E2E=1: make
// test-e2e.

const (
	e2eCooldown = 5 * time.Second // fallback_cooldown and fallback_lifetime
	e2eFallback = 2 * time.Second // the bound: down → first query on another member
)

// TestE2EFallback: pg_doorman sits on node1's unix socket with
// patroni_api_urls. When node1's PostgreSQL goes away (stopped with pg_ctl
// while node1 is a replica, or its postmaster SIGKILLed while node1 is the
// leader, which Patroni restarts in place), a new client query succeeds on
// another member within 2 s and the fallback metrics name that member; no
// new server connection goes to the local socket during fallback_cooldown;
// once Patroni has brought node1 back and the cooldown is over, queries run
// on the local socket again and the fallback metrics are cleared.
func TestE2EFallback(t *testing.T) {
	sbx := patronisbx.Up(t)
	cases := []struct {
		name   string
		leader bool // node1's role when it goes down
		down   func(t *testing.T, n patronisbx.Node)
	}{
		{"pg_ctl_stop_replica", false, func(t *testing.T, n patronisbx.Node) { sbx.StopPostgres(t, n) }},
		{"sigkill_leader", true, func(t *testing.T, n patronisbx.Node) { sbx.KillPostmaster(t, n) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sbx.WaitHealthy(t)
			node1 := sbx.Node(t, "node1")
			if isLeader := sbx.Leader(t).Name == node1.Name; isLeader != tc.leader {
				candidate := node1.Name
				if !tc.leader {
					candidate = "node2"
				}
				sbx.SwitchoverT(t, candidate)
				sbx.WaitHealthy(t)
			}
			runFallback(t, sbx, tc.down)
		})
	}
}

func runFallback(t *testing.T, sbx *patronisbx.Sandbox, down func(*testing.T, patronisbx.Node)) {
	node1 := sbx.Node(t, "node1")
	m1, _ := sbx.Cluster(t).Member(node1.Name)
	t.Logf("node1 is %s (%s) before it goes down", m1.Role, m1.State)
	d := startDoorman(t, sbx, node1, fmt.Sprintf(`
  patroni_api_urls: ["%s"]
  patroni_api_timeout: 1s
  fallback_connect_timeout: 1s
  fallback_cooldown: %s
  fallback_lifetime: %s`, strings.Join(sbx.APIURLs(), `", "`), e2eCooldown, e2eCooldown))
	host, err := serverAddr(context.Background(), d)
	require.NoError(t, err)
	require.Empty(t, host, "before the stop, queries run over node1's unix socket")
	before := fallbackSuccesses(t, d)
	oldPID, err := sbx.PostmasterPID(node1)
	require.NoError(t, err)

	downStart := time.Now()
	down(t, node1)
	downAt := time.Now()
	host, firstOK := firstFallback(t, d, downAt)
	t.Logf("node1 down after %s; first successful query through pg_doorman %s later, on %s",
		downAt.Sub(downStart).Round(time.Millisecond), firstOK.Round(time.Millisecond), host)
	require.NotEqual(t, node1.Host, host)
	require.Less(t, firstOK, e2eFallback, "down → first query on another member")
	require.Greater(t, fallbackSuccesses(t, d), before, "pg_doorman_fallback_connections_total{result=success} grew")
	require.Equal(t, 1.0, gaugeValue(t, d, "pg_doorman_fallback_active"), "pg_doorman_fallback_active")
	require.Equal(t, []string{fmt.Sprintf("%s:%d", host, patronisbx.PGPort)}, fallbackHosts(t, d),
		"pg_doorman_fallback_host names the member the query ran on")

	// The cooldown began between downAt and the first fallback query.
	cooldownEnd := downAt.Add(firstOK + e2eCooldown)
	isBack := func(m patroni.Member) bool { return m.Serving() && restarted(sbx, node1, oldPID) }
	backAt := probeCooldown(t, sbx, d, node1, downAt.Add(e2eCooldown), isBack)
	if backAt.IsZero() {
		back := sbx.WaitMember(t, node1.Name, 2*time.Minute, isBack)
		backAt = time.Now()
		t.Logf("node1 back as %s (%s) after the cooldown", back.Role, back.State)
	}
	t.Logf("node1 running again %s after it went down", backAt.Sub(downAt).Round(time.Millisecond))
	var local time.Duration // down → first query on the local socket again
	require.Eventually(t, func() bool {
		h, err := serverAddr(context.Background(), d)
		local = time.Since(downAt)
		return err == nil && h == ""
	}, time.Until(later(backAt, cooldownEnd))+e2eCooldown+5*time.Second, 100*time.Millisecond,
		"queries return to the local socket after the cooldown")
	t.Logf("back on the local socket %s after node1 went down (cooldown %s from the first fallback query)",
		local.Round(time.Millisecond), e2eCooldown)
	if backAt.Before(cooldownEnd) {
		// Fallback connections do not outlive the cooldown by more than
		// MinLifetime; else this took up to another fallback_lifetime.
		require.Less(t, local, firstOK+e2eCooldown+fallback.MinLifetime+2*time.Second,
			"back on the local socket soon after the cooldown")
	}
	for range 5 {
		h, err := serverAddr(context.Background(), d)
		require.NoError(t, err)
		require.Empty(t, h, "fallback connections are retired once the local server answers")
	}
	require.Equal(t, 0.0, gaugeValue(t, d, "pg_doorman_fallback_active"), "pg_doorman_fallback_active after the cooldown")
	require.Empty(t, fallbackHosts(t, d), "pg_doorman_fallback_host is cleared after the cooldown")
}

// firstFallback runs new client queries through pg_doorman until one
// succeeds on another member (at most 10 s) and returns that member's
// address and the time since downAt.
func firstFallback(t *testing.T, d *apptest.Instance, downAt time.Time) (string, time.Duration) {
	t.Helper()
	var failures []string
	for time.Since(downAt) < 10*time.Second {
		host, err := serverAddr(context.Background(), d)
		switch {
		case err != nil:
			failures = append(failures, err.Error())
			time.Sleep(20 * time.Millisecond) // pacing of the probe, not synchronisation
		case host == "":
			failures = append(failures, "ran on the local socket")
			time.Sleep(20 * time.Millisecond)
		default:
			took := time.Since(downAt)
			if len(failures) > 0 {
				t.Logf("%d failed attempts before: %q", len(failures), failures)
			}
			return host, took
		}
	}
	t.Fatalf("no query succeeded on another member within 10s: %q", failures)
	return "", 0
}

// restarted reports whether node runs a new postmaster (not oldPID) that
// accepts connections on its unix socket. /cluster alone is not enough: it
// keeps saying "running" until Patroni's next HA loop notices the stop.
func restarted(sbx *patronisbx.Sandbox, node patronisbx.Node, oldPID int) bool {
	if pid, err := sbx.PostmasterPID(node); err != nil || pid == oldPID {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", node.SocketDir, node.Port))
	if err != nil {
		return false
	}
	defer c.Close(ctx)
	return c.Ping(ctx) == nil
}

// probeCooldown runs a query every 200 ms until shortly before until and
// requires each to run on another member: no new server connection goes to
// the local socket during the cooldown, even once Patroni has node running
// again. It returns when node was first seen back (isBack), zero if not yet.
func probeCooldown(t *testing.T, sbx *patronisbx.Sandbox, d *apptest.Instance, node patronisbx.Node, until time.Time,
	isBack func(patroni.Member) bool) time.Time {
	t.Helper()
	var backAt time.Time
	for time.Now().Before(until.Add(-200 * time.Millisecond)) {
		h, err := serverAddr(context.Background(), d)
		require.NoError(t, err, "queries keep working during the cooldown")
		require.NotEmpty(t, h, "the local socket is not used during fallback_cooldown")
		if backAt.IsZero() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if cl, err := sbx.FetchCluster(ctx); err == nil {
				if m, ok := cl.Member(node.Name); ok && isBack(m) {
					backAt = time.Now()
					t.Logf("node1 back as %s (%s) during the cooldown", m.Role, m.State)
				}
			}
			cancel()
		}
		time.Sleep(200 * time.Millisecond) // pacing of the probe, not synchronisation
	}
	return backAt
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestE2EReadWriteAfterSwitchover: pg_doorman on a replica's unix socket;
// psql asking for target_session_attrs=read-write is refused; after
// `patronictl switchover` to that replica, psql connects through pg_doorman
// and can INSERT into public.probe, still over the local socket.
func TestE2EReadWriteAfterSwitchover(t *testing.T) {
	sbx := patronisbx.Up(t)
	psql, err := exec.LookPath(patronisbx.PGBin + "/psql")
	require.NoError(t, err, "apt-get install -y postgresql-client-15")
	var replica patronisbx.Node
	for _, m := range sbx.Cluster(t).Members {
		if m.Role.IsReplica() {
			replica = sbx.Node(t, m.Name)
			break
		}
	}
	require.NotEmpty(t, replica.Name, "the healthy sandbox has replicas")
	d := startDoorman(t, sbx, replica, "")
	ctx := context.Background()
	host, err := serverAddr(ctx, d) // also teaches the pool the SCRAM key
	require.NoError(t, err)
	require.Empty(t, host)

	insert := func() (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
			fmt.Sprintf("host=127.0.0.1 port=%d user=app dbname=app sslmode=disable connect_timeout=5 target_session_attrs=read-write", d.Port),
			"-c", "INSERT INTO public.probe(note) VALUES ('pg_doorman e2e') RETURNING coalesce(host(inet_server_addr()), 'local'), pg_is_in_recovery()")
		cmd.Env = append(os.Environ(), "PGPASSWORD=app", "PGCONNECT_TIMEOUT=5")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := insert()
	require.Error(t, err, "a replica is not read-write: %s", out)
	require.Contains(t, out, "read-only", "libpq refuses the session")

	start := time.Now()
	t.Logf("switchover to %s:\n%s", replica.Name, sbx.SwitchoverT(t, replica.Name))
	pctlDone := time.Since(start)
	var lastOut string
	var lastErr error
	deadline := time.Now().Add(30 * time.Second)
	for {
		if lastOut, lastErr = insert(); lastErr == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // pacing of the probe, not synchronisation
	}
	require.NoError(t, lastErr, "psql read-write through pg_doorman after the switchover: %s", lastOut)
	t.Logf("patronictl returned after %s; psql read-write INSERT through pg_doorman after %s",
		pctlDone.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	require.Equal(t, "local|f", lastOut, "the INSERT ran on the promoted node over its unix socket")
}

// startDoorman starts pg_doorman with pool app → node's unix socket for
// user app (password app, SCRAM passthrough with the cluster's verifier);
// general adds lines to the general section.
func startDoorman(t *testing.T, sbx *patronisbx.Sandbox, node patronisbx.Node, general string) *apptest.Instance {
	t.Helper()
	return apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 10s%s
pools:
  app:
    server_host: "%s"
    server_port: %d
    users:
      - username: app
        password: '%s'
        pool_size: 4
`, general, node.SocketDir, node.Port, sbx.Verifier(t, "app")))
}

// serverAddr runs one query through pg_doorman on a new client connection
// and returns inet_server_addr(): "" over a unix socket, else the member's
// address.
func serverAddr(ctx context.Context, d *apptest.Instance) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, d.DSN("app", "app", "app"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var host *string
	if err := c.QueryRow(ctx, "SELECT host(inet_server_addr())").Scan(&host); err != nil {
		return "", err
	}
	if host == nil {
		return "", nil
	}
	return *host, nil
}

func fallbackSuccesses(t *testing.T, d *apptest.Instance) float64 {
	t.Helper()
	var n float64
	for _, m := range family(t, d, "pg_doorman_fallback_connections_total") {
		if label(m, "pool") == "app" && label(m, "result") == "success" {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

func gaugeValue(t *testing.T, d *apptest.Instance, name string) float64 {
	t.Helper()
	for _, m := range family(t, d, name) {
		if label(m, "pool") == "app" {
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s{pool=app}", name)
	return 0
}

// fallbackHosts lists host:port of every pg_doorman_fallback_host{pool=app}.
func fallbackHosts(t *testing.T, d *apptest.Instance) []string {
	t.Helper()
	var hosts []string
	for _, m := range family(t, d, "pg_doorman_fallback_host") {
		if label(m, "pool") == "app" && m.GetGauge().GetValue() == 1 {
			hosts = append(hosts, label(m, "host")+":"+label(m, "port"))
		}
	}
	return hosts
}

// family gathers pg_doorman's registry and returns the metrics of name.
func family(t *testing.T, d *apptest.Instance, name string) []*dto.Metric {
	t.Helper()
	families, err := d.Metrics.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
