package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHandlerServesTheFamilies(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	m.Rejected("max_connections")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Type"), "text/plain")
	body := rec.Body.String()
	for _, want := range []string{
		`pg_doorman_pools_clients{database="mydb",status="idle",user="app"} 0`,
		`pg_doorman_pool_size{database="mydb",user="app"} 7`,
		`pg_doorman_client_connections_rejected_total{reason="max_connections"} 1`,
		"# TYPE pg_doorman_connection_count gauge",
		"go_goroutines ",
	} {
		require.Contains(t, body, want)
	}
}

// get fetches url; it is safe to call from a condition of
// require.Eventually (no t.FailNow).
func get(url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestServeUntilContextEnds(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln) }()

	url := "http://" + ln.Addr().String()
	code, body, err := get(url + "/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "pg_doorman_pools_servers{")
	require.Contains(t, body, `promhttp_metric_handler_requests_total{code="200"}`)
	code, _, err = get(url + "/other")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the context ended")
	}
	_, _, err = get(url + "/metrics")
	require.Error(t, err, "the listener is closed")
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := listenOnFreePort(t, ctx, m)
	code, body, err := get("http://" + addr + "/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "pg_doorman_pool_size{")
	cancel()
	require.NoError(t, <-done)
}

// listenOnFreePort runs ListenAndServe on a port that was free a moment
// ago and waits until it answers. Another process may take the port in
// between; then it tries another one.
func listenOnFreePort(t *testing.T, ctx context.Context, m *Metrics) (string, <-chan error) {
	t.Helper()
	for range 5 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		done := make(chan error, 1)
		go func() { done <- m.ListenAndServe(ctx, addr) }()
		up := make(chan bool, 1)
		require.Eventually(t, func() bool {
			select {
			case err := <-done:
				t.Logf("ListenAndServe on %s: %v; trying another port", addr, err)
				up <- false
				return true
			default:
			}
			if _, _, err := get("http://" + addr + "/metrics"); err != nil {
				return false
			}
			up <- true
			return true
		}, 5*time.Second, 10*time.Millisecond)
		if <-up {
			return addr, done
		}
	}
	t.Fatal("no free port found")
	return "", nil
}

func TestListenAndServeReportsListenErrors(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	m := New(newDaemon(t))
	err = m.ListenAndServe(context.Background(), busy.Addr().String())
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "listen on "+busy.Addr().String()+":"), err.Error())
}
