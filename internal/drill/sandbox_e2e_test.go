package drill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/drill"
	"github.com/doorman-go/doorman/internal/pgtest/patronisbx"
	"github.com/doorman-go/doorman/internal/proxy"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

// The drill against the real 3-node Patroni sandbox (make drill). Knobs:
// DRILL_RUNS (runs per stack of the switchover, default 5),
// DRILL_UNPLANNED_RUNS (runs per stack of each unplanned case, default 2),
// DRILL_SCENARIOS (comma list, run in that order; default all), DRILL_VALIDATE (libpq or show),
// DRILL_HOLD=<duration> (the write port's hold_timeout), DRILL_LOGIN_RETRY=<duration> (pg_doorman's
// server_login_retry), DRILL_LOGIN_RETRY_PATRONI=1 (gated by the node's Patroni:
// server_login_retry_patroni), DRILL_DOORMAN_FALLBACK=1 (pg_doorman's Patroni fallback on), DRILL_SYNC=1
// (Patroni synchronous_mode on for each run; up.sh turns it off again), DRILL_OUT (JSON lines of the
// results, default /tmp/doorman-drill-results.jsonl), DRILL_REPORTS (folder
// of every run's full report, default /tmp/doorman-drill-reports).

// doormanPort is the port of the pg_doorman beside each node (127.0.1.N).
const doormanPort = 26432

type scenario struct {
	name     string
	duration time.Duration // how long the workers write
	act      func(t *testing.T, sbx *patronisbx.Sandbox, leader, candidate patronisbx.Node)
}

var scenarios = []scenario{
	{"switchover", 14 * time.Second, func(t *testing.T, sbx *patronisbx.Sandbox, _, c patronisbx.Node) {
		// patronictl exits 0 when Patroni refuses (e.g. 412, a candidate
		// that is not the sync_standby in synchronous_mode): SwitchoverT
		// reads its output.
		sbx.SwitchoverT(t, c.Name)
	}},
	// With the default primary_start_timeout Patroni restarts the
	// postmaster in place (sandbox README, pitfall 4).
	{"kill_postmaster", 26 * time.Second, func(t *testing.T, sbx *patronisbx.Sandbox, l, _ patronisbx.Node) {
		sbx.KillPostmaster(t, l)
	}},
	{"node_loss", 26 * time.Second, func(t *testing.T, sbx *patronisbx.Sandbox, l, _ patronisbx.Node) {
		killPatroni(t, l)
		sbx.KillPostmaster(t, l)
	}},
	{"restart", 18 * time.Second, func(t *testing.T, sbx *patronisbx.Sandbox, l, _ patronisbx.Node) {
		sbx.Pctl(t, "restart", "pgsandbox", l.Name, "--force")
	}},
}

type result struct {
	Scenario         string          `json:"scenario"`
	Stack            string          `json:"stack"`
	Run              int             `json:"run"`
	Paired           bool            `json:"paired,omitempty"` // both stacks at once, across the same action
	From             string          `json:"from,omitempty"`
	To               string          `json:"to,omitempty"`
	GapS             float64         `json:"write_gap_s"`
	FirstAckS        float64         `json:"first_ack_on_new_after_action_s"`
	Events           int             `json:"events"`
	Acked            int             `json:"acknowledged"`
	Rejected         int             `json:"rejected"`
	Unknown          int             `json:"unknown"`
	UnknownCommitted int             `json:"unknown_committed"`
	AckMissing       int             `json:"acknowledged_missing"`
	Violations       int             `json:"violations"`
	Failures         []drill.Failure `json:"failures"`
	Validate         string          `json:"validate"`
	Sync             bool            `json:"synchronous_mode"`
	Fallback         bool            `json:"doorman_fallback"`
	Hold             string          `json:"proxy_hold_timeout,omitempty"`
	LoginRetry       string          `json:"doorman_server_login_retry,omitempty"`
	LoginRetryGate   bool            `json:"doorman_server_login_retry_patroni,omitempty"`
	Load1            string          `json:"loadavg_1m"`
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

// TestDrillSandbox brings up the sandbox, patroni_proxy and a pg_doorman
// beside each node, and runs the drill across a planned switchover and
// each unplanned case, alternating the direct multi-host DSN (the floor)
// and patroni_proxy → pg_doorman; every run must reconcile with 0
// acknowledged missing, 0 duplicates and 0 unreconciled.
func TestDrillSandbox(t *testing.T) {
	sbx := patronisbx.Up(t)
	verifier := sbx.Verifier(t, "app")
	for _, n := range sbx.Nodes {
		startDoorman(t, sbx, n, verifier)
	}
	reg := prometheus.NewRegistry()
	master := startProxy(t, sbx, reg)
	stacks := []stack{
		{"direct", fmt.Sprintf("host=%s port=%d user=app password=app dbname=app sslmode=disable connect_timeout=2",
			strings.Join(hosts(sbx), ","), patronisbx.PGPort)},
		{"ours", fmt.Sprintf("host=127.0.0.1 port=%d user=app password=app dbname=app sslmode=disable connect_timeout=2", master)},
	}
	// DRILL_SCENARIOS picks scenarios and their order (the priority when a
	// session may be cut short); default all, in the order above.
	run := scenarios
	if names := strings.TrimSpace(os.Getenv("DRILL_SCENARIOS")); names != "" {
		run = nil
		for _, name := range strings.Split(names, ",") {
			for _, sc := range scenarios {
				if sc.name == strings.TrimSpace(name) {
					run = append(run, sc)
				}
			}
		}
	}
	out := os.Getenv("DRILL_OUT")
	if out == "" {
		out = "/tmp/doorman-drill-results.jsonl"
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer f.Close()
	paired := os.Getenv("DRILL_PAIRED") == "1"
	var all []result
	for _, sc := range run {
		runs := envInt("DRILL_UNPLANNED_RUNS", 2)
		if sc.name == "switchover" {
			runs = envInt("DRILL_RUNS", 5)
		}
		t.Run(sc.name, func(t *testing.T) {
			for i := range runs {
				groups := [][]stack{stacks[:1], stacks[1:]}
				if paired {
					groups = [][]stack{stacks}
				}
				for _, g := range groups {
					for _, r := range runOnce(t, sbx, sc, g, i) {
						b, _ := json.Marshal(r)
						_, _ = f.Write(append(b, '\n'))
						all = append(all, r)
						t.Logf("%s %s run %d: gap %.2f s, first ack on new %.2f s after the action, %d events, rejected %d, unknown %d (committed %d), %s→%s, load %s, failures %v",
							sc.name, r.Stack, i, r.GapS, r.FirstAckS, r.Events, r.Rejected, r.Unknown, r.UnknownCommitted, r.From, r.To, r.Load1, r.Failures)
					}
				}
			}
			t.Logf("%s done; patroni_proxy leader checks so far: %s", sc.name, leaderChecks(t, reg))
		})
	}
	require.NotEmpty(t, all, "no scenario ran: DRILL_SCENARIOS=%q", os.Getenv("DRILL_SCENARIOS"))
	t.Logf("results appended to %s\n%s", out, summaryTable(all))
	t.Logf("patroni_proxy leader checks: %s", leaderChecks(t, reg))
}

// validateMode is DRILL_VALIDATE, default libpq (the probe used
// psycopg, that is libpq).
func validateMode() string {
	if v := os.Getenv("DRILL_VALIDATE"); v != "" {
		return v
	}
	return drill.ValidateLibpq
}

func hosts(sbx *patronisbx.Sandbox) []string {
	var h []string
	for _, n := range sbx.Nodes {
		h = append(h, n.Host)
	}
	return h
}

type stack struct{ name, dsn string }

// runOnce runs the drill through each of stacks at the same time across
// one action on the leader: one stack, or with DRILL_PAIRED=1 both, so
// that they meet the same Patroni timing (which HA loop notices a crash
// decides between gaps 2 s apart, in every stack; docs/failover.md).
func runOnce(t *testing.T, sbx *patronisbx.Sandbox, sc scenario, stacks []stack, run int) []result {
	t.Helper()
	sbx.WaitHealthy(t)
	leader := sbx.Leader(t)
	var candidate patronisbx.Node
	for i, n := range sbx.Nodes {
		if n.Name == leader.Name {
			candidate = sbx.Nodes[(i+1+run%2)%len(sbx.Nodes)]
		}
	}
	if os.Getenv("DRILL_SYNC") == "1" {
		// In synchronous_mode Patroni switches over only to the sync_standby.
		sync := syncMode(t, sbx)
		for _, n := range sbx.Nodes {
			if n.Name == sync {
				candidate = n
			}
		}
	}
	type res struct {
		r   *drill.Report
		err error
	}
	type running struct {
		st      stack
		table   string
		done    chan res
		started time.Time
	}
	runs := make([]*running, len(stacks))
	for i, st := range stacks {
		rn := &running{st: st, table: fmt.Sprintf("doorman_drill_%s_%s_%d", sc.name, st.name, run), done: make(chan res, 1)}
		runs[i] = rn
		mark := make(chan struct{})
		go func() {
			r, err := drill.Run(context.Background(), drill.Config{DSN: st.dsn, Duration: sc.duration, Table: rn.table, Validate: validateMode(),
				Mark: func(at time.Time) { rn.started = at; close(mark) }}, nil)
			rn.done <- res{r, err}
		}()
		select {
		case <-mark:
		case r := <-rn.done:
			t.Fatalf("drill through %s did not start: %v", st.name, r.err)
		}
	}
	for _, rn := range runs {
		require.Eventually(t, func() bool { return rows(leader, rn.table) >= 20 }, 10*time.Second, 50*time.Millisecond,
			"writes through %s reach the leader %s before the action", rn.st.name, leader.Name)
	}
	actedAt := time.Now()
	sc.act(t, sbx, leader, candidate)
	var out []result
	for _, rn := range runs {
		got := <-rn.done
		require.NoError(t, got.err)
		out = append(out, runResult(t, sc, rn.st.name, run, got.r, actedAt.Sub(rn.started), len(stacks) > 1))
	}
	return out
}

// runResult checks one stack's report of a run and sums it up.
func runResult(t *testing.T, sc scenario, stack string, run int, rep *drill.Report, actionAt time.Duration, paired bool) result {
	t.Helper()
	saveReport(t, rep, fmt.Sprintf("%s_%s_%d", sc.name, stack, run))
	rc := rep.Reconciliation
	// Violations are errors, not fatal: the other runs still tell something.
	assert.True(t, rc.Done, "reconciled: %s", rc.Error)
	assert.Zero(t, rc.AckMissing, "acknowledged missing (%s, %s run %d)", sc.name, stack, run)
	assert.Zero(t, rc.Duplicates, "duplicates (%s, %s run %d)", sc.name, stack, run)
	assert.Zero(t, rc.Unreconciled, "unreconciled (%s, %s run %d)", sc.name, stack, run)
	assert.Zero(t, rc.Violations(), "%+v", rc)
	load, _ := os.ReadFile("/proc/loadavg")
	r := result{Scenario: sc.name, Stack: stack, Run: run, Paired: paired, GapS: rep.Summary.WriteGap.Seconds(), FirstAckS: -1,
		Events: rep.Summary.Events, Acked: rep.Summary.Outcomes[drill.Acknowledged], Rejected: rep.Summary.Outcomes[drill.Rejected],
		Unknown: rep.Summary.Outcomes[drill.Unknown], UnknownCommitted: rc.UnknownCommitted, AckMissing: rc.AckMissing,
		Violations: rc.Violations(), Failures: rep.Summary.Failures, Validate: validateMode(),
		Fallback: os.Getenv("DRILL_DOORMAN_FALLBACK") == "1", Sync: os.Getenv("DRILL_SYNC") == "1", Hold: os.Getenv("DRILL_HOLD"), LoginRetry: os.Getenv("DRILL_LOGIN_RETRY"),
		LoginRetryGate: os.Getenv("DRILL_LOGIN_RETRY") != "" && os.Getenv("DRILL_LOGIN_RETRY_PATRONI") == "1", Load1: strings.Fields(string(load))[0]}
	if np := rep.Summary.NewPrimary; assert.NotNil(t, np, "writes resumed on a new postmaster within %s: %+v", sc.duration, rep.Summary.Servers) {
		r.From, r.To, r.FirstAckS = np.From, np.To, (np.FirstOnNew - actionAt).Seconds()
	}
	return r
}

// saveReport writes the full report, events included, to
// DRILL_REPORTS (default /tmp/doorman-drill-reports)/name.json.
func saveReport(t *testing.T, rep *drill.Report, name string) {
	dir := os.Getenv("DRILL_REPORTS")
	if dir == "" {
		dir = "/tmp/doorman-drill-reports"
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, name+".json"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, rep.WriteJSON(f, true))
}

// rows counts the drill table's rows on node as the superuser (unix socket).
func rows(node patronisbx.Node, table string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=postgres dbname=app", node.SocketDir, node.Port))
	if err != nil {
		return 0
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		return 0
	}
	return n
}

// killPatroni sends SIGKILL to node's Patroni (BASE/nodeN/patroni.pid,
// checked against its command line); up.sh starts it again later.
func killPatroni(t *testing.T, node patronisbx.Node) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(node.DataDir), "patroni.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	require.NoError(t, err)
	require.Contains(t, string(cmdline), "patroni", "pid %d is Patroni", pid)
	require.Contains(t, string(cmdline), filepath.Dir(node.DataDir), "pid %d is %s's Patroni", pid, node.Name)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
}

// fallbackConf turns on pg_doorman's Patroni fallback when
// DRILL_DOORMAN_FALLBACK=1 (default off). Behind patroni_proxy it only
// hurts writes: a leader's pg_doorman whose local server is down falls back
// to a replica (seed 002 order: sync_standby, replica, others) and stays
// there for fallback_cooldown (30 s) even after Patroni restarted the
// server in place, so writes through the proxy do not resume until then.
func fallbackConf(sbx *patronisbx.Sandbox) string {
	if os.Getenv("DRILL_DOORMAN_FALLBACK") != "1" {
		return ""
	}
	return fmt.Sprintf(`
  patroni_api_urls: ["%s"]
  patroni_api_timeout: 1s
  fallback_connect_timeout: 1s`, strings.Join(sbx.APIURLs(), `", "`))
}

// loginRetryConf is pg_doorman's server_login_retry from DRILL_LOGIN_RETRY
// (default off, as pg_doorman's default), gated by the node's own Patroni
// (server_login_retry_patroni) with DRILL_LOGIN_RETRY_PATRONI=1.
func loginRetryConf(node patronisbx.Node) string {
	v := os.Getenv("DRILL_LOGIN_RETRY")
	if v == "" {
		return ""
	}
	conf := "\n  server_login_retry: " + v
	if os.Getenv("DRILL_LOGIN_RETRY_PATRONI") == "1" {
		conf += "\n  server_login_retry_patroni: " + node.APIURL
	}
	return conf
}

func startDoorman(t *testing.T, sbx *patronisbx.Sandbox, node patronisbx.Node, verifier string) *apptest.Instance {
	t.Helper()
	return apptest.Start(t, fmt.Sprintf(`general:
  host: %s
  port: %d
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 10s%s%s
pools:
  app:
    server_host: "%s"
    server_port: %d
    users:
      - username: app
        password: '%s'
        pool_size: 8
`, node.Host, doormanPort, loginRetryConf(node), fallbackConf(sbx), node.SocketDir, node.Port, verifier))
}

// startProxy runs patroni_proxy with its defaults (3 s poll) and a master
// port whose members are the pg_doorman beside each node; it returns the
// master port.
func startProxy(t *testing.T, sbx *patronisbx.Sandbox, reg *prometheus.Registry) int {
	t.Helper()
	cfg := &proxyconfig.Config{
		ClusterUpdateInterval: proxyconfig.DefaultClusterUpdateInterval, ListenAddress: "127.0.0.1:0",
		ConnectTimeout: proxyconfig.DefaultConnectTimeout, PatroniTimeout: proxyconfig.DefaultPatroniTimeout,
		MaxTopologyAge: max(proxyconfig.MinMaxTopologyAge, 3*proxyconfig.DefaultClusterUpdateInterval), ShutdownTimeout: time.Second,
		Clusters: map[string]proxyconfig.Cluster{"sbx": {Hosts: sbx.APIURLs(), Ports: map[string]proxyconfig.Port{
			"master": {Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{proxyconfig.RoleLeader}, HostPort: doormanPort, HoldTimeout: drillHold(t)},
		}}},
	}
	p := proxy.New(cfg, proxy.Options{Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), Registry: reg})
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	require.NoError(t, p.Refresh(context.Background()))
	return p.PortAddr("sbx", "master").(*net.TCPAddr).Port
}

// drillHold is DRILL_HOLD, the master port's hold_timeout (default 0, the
// proxy's default: refuse at once).
func drillHold(t *testing.T) time.Duration {
	v := os.Getenv("DRILL_HOLD")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "DRILL_HOLD")
	return d
}

// leaderChecks is patroni_proxy_leader_checks_total by result, e.g.
// "promoted=12 live_primary=5": how often the write port was opened on a
// leader's own word, and how.
func leaderChecks(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var parts []string
	for _, mf := range mfs {
		if mf.GetName() != "patroni_proxy_leader_checks_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					parts = append(parts, fmt.Sprintf("%s=%.0f", l.GetValue(), m.GetCounter().GetValue()))
				}
			}
		}
	}
	return strings.Join(parts, " ")
}
