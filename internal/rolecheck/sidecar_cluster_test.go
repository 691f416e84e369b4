package rolecheck

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
)

const sidecarUser = "rolecheck_sidecar"

func newClusterSidecar(t *testing.T, c *pgtest.Cluster, method Method, interval time.Duration) *httptest.Server {
	t.Helper()
	o := opts(c, RoleAny, method)
	o.User = sidecarUser
	sc, err := NewSidecar(SidecarConfig{Options: o, CacheInterval: interval})
	require.NoError(t, err)
	srv := httptest.NewServer(sc.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, method, url string) (int, statusBody) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body statusBody
	require.NoError(t, json.Unmarshal(b, &body), string(b))
	return resp.StatusCode, body
}

func testSidecar(t *testing.T, pp pair) {
	pp.primary.CreateUser(t, sidecarUser, checkPass, "scram-sha-256")
	pp.primary.WaitReplay(t, pp.replica)
	tests := []struct {
		path                 string
		onPrimary, onReplica int
	}{
		{"/primary", 200, 503},
		{"/master", 200, 503},
		{"/read-write", 200, 503},
		{"/replica", 503, 200},
		{"/replica?lag=16MB", 503, 200},
		{"/read-only", 200, 200},
		{"/health", 200, 200},
		{"/replica?lag=nonsense", 400, 400},
	}
	for _, method := range []Method{MethodHotStandby, MethodRecovery} {
		prim := newClusterSidecar(t, pp.primary, method, 50*time.Millisecond)
		repl := newClusterSidecar(t, pp.replica, method, 50*time.Millisecond)
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s%s", method, tt.path), func(t *testing.T) {
				code, body := get(t, http.MethodOptions, prim.URL+tt.path)
				require.Equal(t, tt.onPrimary, code, "%+v", body)
				code, body = get(t, http.MethodGet, repl.URL+tt.path)
				require.Equal(t, tt.onReplica, code, "%+v", body)
				if code != 400 {
					require.Equal(t, RoleReplica, body.Role)
					require.NotNil(t, body.LagBytes)
				}
			})
		}
	}
	t.Run("Storm", func(t *testing.T) { testSidecarStorm(t, pp.replica) })
	t.Run("Metrics", func(t *testing.T) {
		srv := newClusterSidecar(t, pp.primary, MethodHotStandby, time.Minute)
		get(t, http.MethodGet, srv.URL+"/primary")
		resp, err := http.Get(srv.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Contains(t, string(b), `pgrole_check_probes_total{result="primary"} 1`)
		require.Contains(t, string(b), `pgrole_check_http_requests_total{code="200",endpoint="primary"} 1`)
		require.Contains(t, string(b), "pgrole_check_up 1")
	})
}

// testSidecarStorm fires 100 concurrent requests at a sidecar with a long
// cache interval and counts the connections the replica logged for the
// sidecar's user (log_connections is on in pgtest clusters).
func testSidecarStorm(t *testing.T, c *pgtest.Cluster) {
	count := func() int {
		return strings.Count(c.ReadLog(t), "connection authorized: user="+sidecarUser+" ")
	}
	before := count()
	srv := newClusterSidecar(t, c, MethodRecovery, 10*time.Second)
	var wg sync.WaitGroup
	codes := make(chan int, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(srv.URL + "/replica?lag=1GB")
			if err != nil {
				codes <- -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		require.Equal(t, 200, code)
	}
	// The probe has finished (every request was answered), so its
	// "connection authorized" line is already in the log.
	got := count() - before
	require.GreaterOrEqual(t, got, 1)
	require.LessOrEqual(t, got, 2, "100 requests made %d PostgreSQL connections", got)
}
