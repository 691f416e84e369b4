package patroni_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
)

func healthyBody(t *testing.T) []byte {
	t.Helper()
	return readFixture(t, "a_async_healthy/cluster.json")
}

type call struct {
	url string
	err error
}

type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) OnRequest(url string, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{url, err})
}

func (r *recorder) byURL() map[string]error {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]error{}
	for _, c := range r.calls {
		out[c.url] = c.err
	}
	return out
}

func newClient(t *testing.T, urls []string, opts patroni.ClientOptions) *patroni.Client {
	t.Helper()
	c, err := patroni.NewClient(urls, opts)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func closedServer(t *testing.T) *patronitest.Server {
	s := patronitest.NewServer(t, nil)
	s.Close()
	return s
}

func TestFetchClusterFirstSuccessWins(t *testing.T) {
	t.Parallel()
	down := closedServer(t)
	slow := patronitest.NewServer(t, healthyBody(t))
	slow.SetDelay(time.Minute)
	fast := patronitest.NewServer(t, healthyBody(t))
	slowArrived := make(chan struct{})
	slow.SetHook(func(n int64, _ *http.Request) {
		if n == 1 {
			close(slowArrived)
		}
	})
	fast.SetHook(func(_ int64, r *http.Request) { // answer only once the slow one is in flight
		select {
		case <-slowArrived:
		case <-r.Context().Done():
		}
	})
	rec := &recorder{}
	c := newClient(t, []string{down.URL(), slow.URL() + "/", fast.URL() + "/patroni"},
		patroni.ClientOptions{Timeout: 30 * time.Second, Observer: rec})

	start := time.Now()
	cl, src, err := c.FetchCluster(context.Background())
	require.NoError(t, err)
	require.Less(t, time.Since(start), 10*time.Second, "must not wait for the slow URL")
	require.Equal(t, fast.URL(), src)
	require.Len(t, cl.Leaders(), 1)
	require.Equal(t, "node1", cl.Leaders()[0].Name)

	calls := rec.byURL()
	require.Len(t, calls, 3, "observer hears every URL before FetchCluster returns")
	require.NoError(t, calls[fast.URL()])
	require.ErrorIs(t, calls[slow.URL()], context.Canceled, "the loser is cancelled")
	require.Error(t, calls[down.URL()])
	require.EqualValues(t, 1, slow.Requests())
}

func TestFetchClusterAllFail(t *testing.T) {
	t.Parallel()
	down := closedServer(t)
	broken := patronitest.NewServer(t, []byte(`{}`))
	broken.SetStatus(http.StatusInternalServerError)
	notFound := patronitest.NewServer(t, nil)
	notFound.SetStatus(http.StatusNotFound)
	garbage := patronitest.NewServer(t, []byte(`{"state":"running","role":"master"}`))
	c := newClient(t, []string{down.URL(), broken.URL(), notFound.URL(), garbage.URL()},
		patroni.ClientOptions{Timeout: 5 * time.Second, Retries: 2})

	_, src, err := c.FetchCluster(context.Background())
	require.Error(t, err)
	require.Empty(t, src)
	msg := err.Error()
	require.Contains(t, msg, "all 4 urls failed")
	prev := -1
	for _, s := range []*patronitest.Server{down, broken, notFound, garbage} {
		at := strings.Index(msg, s.URL()+": ")
		require.Greater(t, at, prev, "errors listed in configuration order")
		prev = at
	}
	require.Contains(t, msg, "500")
	require.Contains(t, msg, "404")
	require.ErrorIs(t, err, patroni.ErrNotCluster)
	var ue *patroni.URLError
	require.ErrorAs(t, err, &ue)

	require.EqualValues(t, 3, broken.Requests(), "5xx retried twice")
	require.EqualValues(t, 1, notFound.Requests(), "4xx not retried")
	require.EqualValues(t, 1, garbage.Requests())
}

func TestFetchClusterRetriesDisabled(t *testing.T) {
	t.Parallel()
	broken := patronitest.NewServer(t, nil)
	broken.SetStatus(http.StatusServiceUnavailable)
	c := newClient(t, []string{broken.URL()}, patroni.ClientOptions{Retries: -1})
	_, _, err := c.FetchCluster(context.Background())
	require.ErrorContains(t, err, "503")
	require.EqualValues(t, 1, broken.Requests())
}

func TestFetchClusterTimeoutBoundsTheCall(t *testing.T) {
	t.Parallel()
	hang := patronitest.NewServer(t, healthyBody(t))
	hang.SetDelay(time.Minute)
	var observed error
	obs := patroni.ObserverFunc(func(_ string, _ time.Duration, err error) { observed = err })
	c := newClient(t, []string{hang.URL()}, patroni.ClientOptions{Timeout: 200 * time.Millisecond, Retries: 3, Observer: obs})
	start := time.Now()
	_, _, err := c.FetchCluster(context.Background())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	require.LessOrEqual(t, hang.Requests(), int64(1), "no retry after the deadline")
	require.ErrorIs(t, observed, context.DeadlineExceeded)
}

func TestFetchClusterParentContext(t *testing.T) {
	t.Parallel()
	hang := patronitest.NewServer(t, healthyBody(t))
	hang.SetDelay(time.Minute)
	c := newClient(t, []string{hang.URL()}, patroni.ClientOptions{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	hang.SetHook(func(int64, *http.Request) { cancel() })
	_, _, err := c.FetchCluster(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestFetchClusterBodyLimit(t *testing.T) {
	t.Parallel()
	body := healthyBody(t)
	srv := patronitest.NewServer(t, body)
	exact := newClient(t, []string{srv.URL()}, patroni.ClientOptions{MaxBodyBytes: int64(len(body))})
	_, _, err := exact.FetchCluster(context.Background())
	require.NoError(t, err)

	small := newClient(t, []string{srv.URL()}, patroni.ClientOptions{MaxBodyBytes: int64(len(body)) - 1})
	_, _, err = small.FetchCluster(context.Background())
	require.ErrorIs(t, err, patroni.ErrBodyTooLarge)

	huge := patronitest.NewServer(t, []byte(`{"members":[],"pad":"`+strings.Repeat("x", 5<<20)+`"}`))
	def := newClient(t, []string{huge.URL()}, patroni.ClientOptions{})
	_, _, err = def.FetchCluster(context.Background())
	require.ErrorIs(t, err, patroni.ErrBodyTooLarge, "default limit is 4 MiB")
}

func TestNewClientURLs(t *testing.T) {
	t.Parallel()
	c, err := patroni.NewClient([]string{
		"http://10.0.0.1:8008", "http://10.0.0.2:8008/", " https://h:8443/patroni ", "http://[::1]:8008/patroni/",
	}, patroni.ClientOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"http://10.0.0.1:8008", "http://10.0.0.2:8008", "https://h:8443", "http://[::1]:8008"}, c.URLs())

	for _, bad := range []string{"10.0.0.1:8008", "ftp://h", "http://", "http://u:p@h:1", "http://h:1/?x=1", "http://h:1/#f", "::"} {
		_, err := patroni.NewClient([]string{"http://ok:1", bad}, patroni.ClientOptions{})
		require.Error(t, err, bad)
	}
	_, err = patroni.NewClient(nil, patroni.ClientOptions{})
	require.ErrorContains(t, err, "no urls")
}

func TestFetchClusterTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := patronitest.NewMutualTLS(t, dir, "doorman")
	caFile, otherFile, certFile, keyFile := m.CAFile, m.OtherCA, m.CertFile, m.KeyFile
	strangerCert, strangerKey := patronitest.WriteCert(t, dir, "stranger", m.Other.IssueClient(t, "stranger"))

	srv := patronitest.NewTLSServer(t, healthyBody(t), m.Server)
	tests := []struct {
		name    string
		tls     *patroni.TLSConfig
		wantErr string
	}{
		{"ca and client cert", &patroni.TLSConfig{CACert: caFile, ClientCert: certFile, ClientKey: keyFile}, ""},
		{"skip verify", &patroni.TLSConfig{SkipVerify: true, ClientCert: certFile, ClientKey: keyFile}, ""},
		{"wrong ca", &patroni.TLSConfig{CACert: otherFile, ClientCert: certFile, ClientKey: keyFile}, "certificate"},
		{"system roots", &patroni.TLSConfig{ClientCert: certFile, ClientKey: keyFile}, "certificate"},
		{"no client cert", &patroni.TLSConfig{CACert: caFile}, "certificate"},
		{"client cert from unknown ca", &patroni.TLSConfig{CACert: caFile, ClientCert: strangerCert, ClientKey: strangerKey}, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, []string{srv.URL()}, patroni.ClientOptions{TLS: tt.tls, Timeout: 5 * time.Second, Retries: -1})
			cl, _, err := c.FetchCluster(context.Background())
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Len(t, cl.Members, 3)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestNewClientTLSErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "x.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	for name, cfg := range map[string]*patroni.TLSConfig{
		"missing ca":   {CACert: filepath.Join(dir, "nope.pem")},
		"ca not pem":   {CACert: notPEM},
		"cert no key":  {ClientCert: notPEM},
		"key no cert":  {ClientKey: notPEM},
		"bad key pair": {ClientCert: notPEM, ClientKey: notPEM},
	} {
		_, err := patroni.NewClient([]string{"https://127.0.0.1:1"}, patroni.ClientOptions{TLS: cfg})
		require.Error(t, err, name)
	}
}

func TestURLErrorUnwrap(t *testing.T) {
	t.Parallel()
	inner := errors.New("boom")
	e := &patroni.URLError{URL: "http://h:1", Err: inner}
	require.Equal(t, "http://h:1: boom", e.Error())
	require.ErrorIs(t, e, inner)
}
