package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

func TestReloadPorts(t *testing.T) {
	t.Parallel()
	l, r1 := newEcho(t, "l"), newEcho(t, "r1")
	h := newHarness(t, ports("master", roles(leader), "ro", roles(async)), l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica))
	rw := connect(t, h.addr("master"))
	ro := connect(t, h.addr("ro"))
	masterAddr := h.addr("master")

	// Add a port, remove "ro", keep "master" unchanged.
	cfg := h.cfg.Clone()
	c := cfg.Clusters["c"]
	c.Ports["master"] = proxyconfig.Port{Listen: h.cfg.Clusters["c"].Ports["master"].Listen, Roles: []proxyconfig.Role{leader}}
	delete(c.Ports, "ro")
	c.Ports["any"] = proxyconfig.Port{Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{anyR}}
	require.NoError(t, h.proxy.Reload(cfg))
	rw.alive()
	ro.closed()
	require.Equal(t, masterAddr, h.addr("master"), "an unchanged port keeps its listener")
	require.Nil(t, h.proxy.PortAddr("c", "ro"))
	require.Contains(t, []string{"l", "r1"}, connect(t, h.addr("any")).backend, "a new port routes at once with the current topology")

	// Changing the roles of a kept port re-applies the topology: the leader's
	// connection no longer qualifies for an async-only port and is cut.
	cfg2 := cfg.Clone()
	cfg2.Clusters["c"].Ports["master"] = proxyconfig.Port{Listen: cfg.Clusters["c"].Ports["master"].Listen, Roles: []proxyconfig.Role{async}}
	require.NoError(t, h.proxy.Reload(cfg2))
	rw.closed()
	require.Equal(t, "r1", connect(t, h.addr("master")).backend)

	// A bad reload (unbindable address) keeps everything as it was.
	bad := cfg2.Clone()
	bad.Clusters["c"].Ports["x"] = proxyconfig.Port{Listen: h.addr("any").String(), Roles: []proxyconfig.Role{leader}}
	require.Error(t, h.proxy.Reload(bad))
	require.Equal(t, 0.0, testutil.ToFloat64(h.proxy.env.metrics.ReloadSuccessful))
	require.Equal(t, 1.0, testutil.ToFloat64(h.proxy.env.metrics.ReloadFailures))
	require.Nil(t, h.proxy.PortAddr("c", "x"))
	require.Equal(t, "r1", connect(t, h.addr("master")).backend)

	// A file that did not load (the command's reload) counts too, and a
	// good reload after it leaves the count where it is.
	h.proxy.ReloadFailed()
	require.Equal(t, 2.0, testutil.ToFloat64(h.proxy.env.metrics.ReloadFailures))
	require.NoError(t, h.proxy.Reload(cfg2))
	require.Equal(t, 1.0, testutil.ToFloat64(h.proxy.env.metrics.ReloadSuccessful))
	require.Equal(t, 2.0, testutil.ToFloat64(h.proxy.env.metrics.ReloadFailures))
}

func TestReloadHostsKeepsConnections(t *testing.T) {
	t.Parallel()
	l, r1 := newEcho(t, "l"), newEcho(t, "r1")
	h := newHarness(t, ports("master", roles(leader)), l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica))
	rw := connect(t, h.addr("master"))

	// Move to another Patroni URL that reports the same cluster.
	other := patronitest.NewServer(t, nil)
	other.SetCluster(t, &patroni.Cluster{Members: []patroni.Member{l.member(patroni.RoleLeader), r1.member(patroni.RoleReplica)}})
	cfg := h.cfg.Clone()
	cfg.Clusters["c"] = proxyconfig.Cluster{Hosts: []string{other.URL()}, Ports: cfg.Clusters["c"].Ports}
	require.NoError(t, h.proxy.Reload(cfg))
	h.patroni.Close()
	require.Eventually(t, func() bool { return other.Requests() > 0 }, waitFor, time.Millisecond)
	h.refresh()
	rw.alive()
	require.Equal(t, "l", connect(t, h.addr("master")).backend)
}

func TestStaleTopologyFailsClosed(t *testing.T) {
	t.Parallel()
	l := newEcho(t, "l")
	h := &harness{t: t, patroni: patronitest.NewServer(t, nil), clock: patronitest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}
	h.setMembers(l.member(patroni.RoleLeader))
	h.cfg = &proxyconfig.Config{
		ClusterUpdateInterval: 3 * time.Second, ListenAddress: "127.0.0.1:0",
		ConnectTimeout: time.Second, PatroniTimeout: time.Second, MaxTopologyAge: 30 * time.Second, ShutdownTimeout: time.Second,
		Clusters: map[string]proxyconfig.Cluster{"c": {Hosts: []string{h.patroni.URL()},
			Ports: map[string]proxyconfig.Port{"master": {Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{leader}}}}},
	}
	h.start(Options{Logger: zaptest.NewLogger(t), Clock: h.clock})
	rw := connect(t, h.addr("master"))

	h.patroni.SetStatus(http.StatusServiceUnavailable) // every URL fails
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.Error(t, h.proxy.Refresh(ctx))
	h.clock.Advance(30 * time.Second) // exactly max_topology_age: still trusted
	require.Equal(t, "l", connect(t, h.addr("master")).backend)
	h.clock.Advance(time.Second)
	refused(t, h.addr("master"))
	require.Equal(t, 1.0, h.refusedCount("master", ReasonStaleTopology))
	rw.alive()                       // existing connections are kept
	h.clock.Advance(3 * time.Second) // the next update tick notices
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(h.proxy.env.metrics.TopologyStale.WithLabelValues("c")) == 1
	}, waitFor, time.Millisecond, "the stale gauge is set on the next tick")
	require.GreaterOrEqual(t, testutil.ToFloat64(h.proxy.env.metrics.UpdateErrors.WithLabelValues("c")), 1.0)

	resp := get(t, h, "/ready")
	require.Equal(t, http.StatusServiceUnavailable, resp.code)
	require.Contains(t, resp.body, "stale topology")

	h.patroni.SetStatus(http.StatusOK)
	h.refresh()
	require.Equal(t, "l", connect(t, h.addr("master")).backend)
	require.Equal(t, http.StatusOK, get(t, h, "/ready").code)
}

type answer struct {
	code int
	body string
}

func get(t *testing.T, h *harness, path string) answer {
	t.Helper()
	resp, err := http.Get("http://" + h.proxy.APIAddr().String() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, string(b)}
}

func TestHTTPAPI(t *testing.T) {
	t.Parallel()
	l, r1 := newEcho(t, "l"), newEcho(t, "r1")
	h := newHarness(t, ports("master", roles(leader)), l.member(patroni.RoleLeader))
	require.Equal(t, answer{200, "OK\n"}, get(t, h, "/"))
	require.Equal(t, answer{200, "OK\n"}, get(t, h, "/health"))
	require.Equal(t, 200, get(t, h, "/ready").code)
	require.Equal(t, 404, get(t, h, "/nope").code)
	first := connect(t, h.addr("master"))

	// /update_clusters applies a change at once (the poll interval is 1 h).
	h.setMembers(l.member(patroni.RoleReplica), r1.member(patroni.RoleLeader))
	require.Equal(t, answer{200, "OK\n"}, get(t, h, "/update_clusters"))
	require.Equal(t, "r1", connect(t, h.addr("master")).backend)
	first.closed()
	h.waitCut("master", ReasonRoleLost, 1)
	h.backendCounts("master", 1)

	st := get(t, h, "/status")
	require.Equal(t, 200, st.code)
	require.Contains(t, st.body, `"member":"r1"`)

	m := get(t, h, "/metrics").body
	for _, want := range []string{
		`patroni_proxy_connections{backend="` + portAddrString(r1.port) + `",cluster="c",port="master"} 1`,
		`patroni_proxy_members{cluster="c",role="leader",state="running"} 1`,
		`patroni_proxy_leaders{cluster="c"} 1`,
		`patroni_proxy_cut_connections_total{cluster="c",port="master",reason="role_lost"} 1`,
		`patroni_proxy_port_open{cluster="c",port="master"} 1`,
		`patroni_proxy_config_last_reload_successful 1`,
	} {
		require.Contains(t, m, want)
	}

	h.patroni.SetStatus(http.StatusInternalServerError)
	bad := get(t, h, "/update_clusters")
	require.Equal(t, http.StatusBadGateway, bad.code)
	require.True(t, strings.Contains(bad.body, "500"), bad.body)
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	l := newEcho(t, "l")
	h := newHarness(t, ports("master", roles(leader)), l.member(patroni.RoleLeader))
	c := connect(t, h.addr("master"))
	addr := h.addr("master")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, h.proxy.Shutdown(ctx), context.DeadlineExceeded, "a connection outlived the grace period")
	c.closed()
	_, err := tryConnect(addr)
	require.Error(t, err, "listener closed")

	// Without connections shutdown is immediate and clean.
	h2 := newHarness(t, ports("master", roles(leader)), l.member(patroni.RoleLeader))
	c2 := connect(t, h2.addr("master"))
	_ = c2.conn.Close()
	h2.backendCounts("master", 0)
	require.NoError(t, h2.proxy.Shutdown(context.Background()))
}
