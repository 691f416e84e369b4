package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

// memberAPI is a fake of one member's own Patroni REST API: GET /patroni
// and /primary answer with the role it is set to (state running), or with
// body when set; down makes both answer 503, notLeader /primary (the member
// does not hold the leader lock in its own view).
type memberAPI struct {
	srv       *httptest.Server
	role      atomic.Value // string
	body      atomic.Value // string; "" = {"state":"running","role":<role>}
	down      atomic.Bool
	notLeader atomic.Bool
}

func newMemberAPI(t *testing.T, role string) *memberAPI {
	t.Helper()
	m := &memberAPI{}
	m.role.Store(role)
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path != "/patroni" && r.URL.Path != "/primary") || m.down.Load() ||
			(r.URL.Path == "/primary" && m.notLeader.Load()) {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		if b, _ := m.body.Load().(string); b != "" {
			_, _ = w.Write([]byte(b))
			return
		}
		_, _ = w.Write([]byte(`{"state":"running","role":"` + m.role.Load().(string) + `"}`))
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *memberAPI) url() string { return m.srv.URL + "/patroni" }

func (h *harness) leaderChecks(result string) float64 {
	return testutil.ToFloat64(h.proxy.env.metrics.LeaderChecks.WithLabelValues("c", result))
}

// TestWritePortWaitsForPromotion: in a switchover Patroni lists the new
// leader in /cluster before its postgres leaves recovery. The write port
// refuses new connections until the leader's own /patroni says master, then
// opens without waiting for the next /cluster poll (cluster_update_interval
// is an hour here); the old leader's connection is cut at the switchover.
func TestWritePortWaitsForPromotion(t *testing.T) {
	t.Parallel()
	n1, n2 := newEcho(t, "node1"), newEcho(t, "node2")
	api1, api2 := newMemberAPI(t, "master"), newMemberAPI(t, "replica")
	with := func(m patroni.Member, api *memberAPI) patroni.Member { m.APIURL = api.url(); return m }
	h := newHarness(t, ports("master", roles(leader), "replicas", roles(syncR, async)),
		with(n1.member(patroni.RoleLeader), api1), with(n2.member(patroni.RoleReplica), api2))
	old := connect(t, h.addr("master"))
	require.Equal(t, "node1", old.backend)
	promoted := h.leaderChecks("promoted") // the first poll and the harness's refresh may both ask
	require.Positive(t, promoted)

	// node2 holds the leader key, its postgres is still in recovery.
	api1.role.Store("replica")
	h.update(with(n1.member(patroni.RoleReplica), api1), with(n2.member(patroni.RoleLeader), api2))
	old.closed()
	refused(t, h.addr("master"))
	require.Positive(t, h.refusedCount("master", ReasonLeaderInRecovery))
	require.Positive(t, h.leaderChecks("in_recovery"))
	// Reads are not held up: the replica port still serves node1.
	require.Equal(t, "node1", connect(t, h.addr("replicas")).backend)

	// node2 is promoted: the recheck opens the port on its own.
	api2.role.Store("master")
	require.Eventually(t, func() bool { return h.leaderChecks("promoted") > promoted }, waitFor, 5*time.Millisecond)
	eventuallyBackend(t, h.addr("master"), "node2")

	// The answer is remembered: later polls do not ask again.
	asked := h.leaderChecks("promoted") + h.leaderChecks("in_recovery") + h.leaderChecks("error")
	h.refresh()
	h.refresh()
	require.Equal(t, asked, h.leaderChecks("promoted")+h.leaderChecks("in_recovery")+h.leaderChecks("error"))
}

// TestWritePortUnreachableLeaderAPI: a new leader whose own API does not
// answer is not trusted (a lost node stays leader in /cluster until its key
// expires); the port opens once the API confirms.
func TestWritePortUnreachableLeaderAPI(t *testing.T) {
	t.Parallel()
	n1 := newEcho(t, "node1")
	api := newMemberAPI(t, "master")
	api.down.Store(true)
	m := n1.member(patroni.RoleLeader)
	m.APIURL = api.url()
	h := newHarness(t, ports("master", roles(leader)), m)
	refused(t, h.addr("master"))
	require.Positive(t, h.leaderChecks("error"))
	api.down.Store(false)
	require.Eventually(t, func() bool { return h.leaderChecks("promoted") > 0 }, waitFor, 5*time.Millisecond)
	eventuallyBackend(t, h.addr("master"), "node1")
}

// eventuallyBackend waits until a connection to addr is greeted by
// backend: a leader check is counted before the topology it leads to is
// applied, so the port opens a moment after the counter moves.
func eventuallyBackend(t *testing.T, addr net.Addr, backend string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := tryConnect(addr)
		if err != nil {
			return false
		}
		_ = c.conn.Close()
		return c.backend == backend
	}, waitFor, 5*time.Millisecond)
}
