package patronitest_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServer(t *testing.T) {
	t.Parallel()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	s := patronitest.NewServer(t, []byte(`{"members":[]}`))

	code, body := get(t, c, s.URL()+"/cluster")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"members":[]}`, body)

	code, _ = get(t, c, s.URL()+"/patroni")
	require.Equal(t, http.StatusNotFound, code)

	s.SetCluster(t, &patroni.Cluster{Members: []patroni.Member{{Name: "a", Role: patroni.RoleLeader, State: "running", LagKnown: true}}, Pause: true})
	var seen []int64
	s.SetHook(func(n int64, _ *http.Request) { seen = append(seen, n) })
	s.SetStatus(http.StatusServiceUnavailable)
	code, body = get(t, c, s.URL()+"/cluster")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.JSONEq(t, `{"members":[{"name":"a","role":"leader","state":"running"}],"pause":true}`, body)
	require.Equal(t, []int64{3}, seen)
	require.EqualValues(t, 3, s.Requests())

	s.SetDelay(time.Hour)
	s.Close() // must not hang with a delay set; the URL then refuses connections
	_, err := c.Get(s.URL() + "/cluster")
	require.Error(t, err)
}

func TestManualClock(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	c := patronitest.NewManualClock(start)
	tk := c.NewTicker(time.Second)
	require.Equal(t, 1, c.Tickers())

	c.Advance(999 * time.Millisecond)
	select {
	case <-tk.C():
		t.Fatal("fired early")
	default:
	}
	c.Advance(5 * time.Millisecond)
	require.Equal(t, start.Add(time.Second), <-tk.C())

	c.Advance(3 * time.Second) // three ticks due, one kept
	require.Equal(t, start.Add(2*time.Second), <-tk.C())
	select {
	case <-tk.C():
		t.Fatal("ticks beyond the first pending one must be dropped")
	default:
	}
	require.Equal(t, start.Add(4004*time.Millisecond), c.Now())

	tk.Stop()
	require.Zero(t, c.Tickers())
}
