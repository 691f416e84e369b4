package patroni_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/patroni"
)

// TestFixtureMemberStatus: every /patroni body captured from Patroni 3.0.2
// parses, and Primary() holds exactly for the member that /cluster of the
// same snapshot lists as a running leader.
func TestFixtureMemberStatus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*", "snapshot.json"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(fixtureDir, "timing_rerun", "*", "snapshot.json"))
	require.NoError(t, err)
	files = append(files, more...)
	require.NotEmpty(t, files)
	parsed, primaries := 0, 0
	for _, f := range files {
		rel, err := filepath.Rel(fixtureDir, f)
		require.NoError(t, err)
		var snap struct {
			Nodes map[string]struct {
				Patroni struct {
					Body       json.RawMessage `json:"body"`
					HTTPStatus int             `json:"http_status"`
				} `json:"patroni"`
			} `json:"nodes"`
		}
		require.NoError(t, json.Unmarshal(readFixture(t, rel), &snap))
		cluster := parseFixture(t, filepath.Join(filepath.Dir(rel), "cluster.json"))
		for name, n := range snap.Nodes {
			if n.Patroni.HTTPStatus != http.StatusOK {
				continue
			}
			st, err := patroni.ParseMemberStatus(n.Patroni.Body)
			require.NoError(t, err, "%s %s", rel, name)
			parsed++
			m, ok := cluster.Member(name)
			want := ok && m.Role == patroni.RoleLeader && m.State == patroni.StateRunning
			require.Equal(t, want, st.Primary(), "%s %s: %+v", rel, name, st)
			if st.Primary() {
				primaries++
				require.Positive(t, st.Timeline, "%s %s", rel, name)
			}
		}
	}
	require.Greater(t, parsed, 30)
	require.Greater(t, primaries, 10)
}

func TestParseMemberStatus(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body    string
		primary bool
		err     bool
	}{
		{body: `{"role":"master","state":"running","timeline":3}`, primary: true},
		{body: `{"role":"primary","state":"running","timeline":3}`, primary: true},
		{body: `{"role":"replica","state":"running","timeline":2}`},
		{body: `{"role":"master","state":"stopped","cluster_unlocked":true}`},
		{body: `{"role":"master","state":"starting"}`},
		{body: `{"role":"standby_leader","state":"running"}`},
		{body: `{"state":"running"}`, err: true},
		{body: `{"role":"master","state":"running","timeline":"x"}`, err: true},
		{body: `[`, err: true},
	} {
		st, err := patroni.ParseMemberStatus([]byte(tt.body))
		if tt.err {
			require.Error(t, err, tt.body)
			continue
		}
		require.NoError(t, err, tt.body)
		require.Equal(t, tt.primary, st.Primary(), tt.body)
	}
}

func TestFetchMemberStatus(t *testing.T) {
	t.Parallel()
	body := `{"role":"replica","state":"running"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/patroni" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	c, err := patroni.NewClient([]string{"http://127.0.0.1:1"}, patroni.ClientOptions{Retries: -1})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	for _, api := range []string{srv.URL + "/patroni", srv.URL, srv.URL + "/"} {
		st, err := c.FetchMemberStatus(context.Background(), api)
		require.NoError(t, err, api)
		require.Equal(t, "replica", st.Role)
		require.False(t, st.Primary())
	}
	_, err = c.FetchMemberStatus(context.Background(), "http://127.0.0.1:1/patroni")
	require.Error(t, err)
	_, err = c.FetchMemberStatus(context.Background(), "::not a url")
	require.Error(t, err)
}

func TestFetchLeaderStatus(t *testing.T) {
	t.Parallel()
	var holds atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/primary" {
			http.NotFound(w, r)
			return
		}
		if !holds.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(`{"state":"starting","role":"master","timeline":4,"xlog":{"location":1}}`))
	}))
	defer srv.Close()
	c, err := patroni.NewClient([]string{"http://127.0.0.1:1"}, patroni.ClientOptions{Retries: -1})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	_, err = c.FetchLeaderStatus(context.Background(), srv.URL+"/patroni")
	require.Error(t, err, "503: the member does not hold the leader lock")
	holds.Store(true)
	st, err := c.FetchLeaderStatus(context.Background(), srv.URL+"/patroni")
	require.NoError(t, err)
	require.Equal(t, patroni.MemberStatus{Role: "master", State: patroni.StateStarting, Timeline: 4}, st)
}

func TestHoldsLeaderLock(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/primary" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(`{"state":"crashed","role":"master"}`))
	}))
	defer srv.Close()
	c, err := patroni.NewClient([]string{"http://127.0.0.1:1"}, patroni.ClientOptions{Retries: -1})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		status  int
		holds   bool
		wantErr bool
	}{
		{http.StatusOK, true, false},
		{http.StatusServiceUnavailable, false, false},
		{http.StatusInternalServerError, false, true},
		{http.StatusNotFound, false, true},
	} {
		status.Store(int32(tc.status))
		holds, err := c.HoldsLeaderLock(context.Background(), srv.URL+"/patroni")
		require.Equal(t, tc.wantErr, err != nil, "status %d: %v", tc.status, err)
		require.Equal(t, tc.holds, holds, "status %d", tc.status)
	}
	require.EqualValues(t, 4, requests.Load(), "no retry of a 503 or 500 with Retries < 0")
	_, err = c.HoldsLeaderLock(context.Background(), "http://127.0.0.1:1")
	require.Error(t, err, "nobody listens: no answer is not an answer")
}
