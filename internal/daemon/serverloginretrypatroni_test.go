package daemon_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// fakeLocalPatroni answers GET /primary as a Patroni that holds the leader
// lock (200) or does not (503), and counts the requests.
type fakeLocalPatroni struct {
	srv      *httptest.Server
	holds    atomic.Bool
	requests atomic.Int32
}

func startFakeLocalPatroni(t *testing.T, holds bool) *fakeLocalPatroni {
	t.Helper()
	f := &fakeLocalPatroni{}
	f.holds.Store(holds)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.URL.Path != "/primary" {
			http.NotFound(w, r)
			return
		}
		if !f.holds.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(`{"state":"starting","role":"replica"}`))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (r *retryRig) poolStat(t *testing.T, get func(notLeader, inRecovery, retries uint64) bool) func() bool {
	p, ok := r.d.Daemon.Pools.Lookup("postgres", "rt")
	require.True(t, ok)
	return func() bool {
		return get(p.Stats.RetryNotLeader.Load(), p.Stats.ConnectInRecovery.Load(), p.Stats.ConnectRetries.Load())
	}
}

// exec logs in as rt and runs one statement on a fresh connection.
func (r *retryRig) exec(ctx context.Context, sql string) error {
	c, err := pgx.Connect(ctx, r.d.DSN("rt", "rt-secret", "postgres")+" default_query_exec_mode=exec")
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql)
	return err
}

// startInRecovery restarts pg as a hot standby of nobody: what Patroni
// does with a crashed leader before it promotes it again.
func startInRecovery(t *testing.T, pg *pgtest.Cluster) {
	t.Helper()
	pg.Stop(t)
	require.NoError(t, os.WriteFile(filepath.Join(pg.DataDir, "standby.signal"), nil, 0o600))
	pg.Start(t)
	require.Equal(t, "true", pg.QueryString(t, "SELECT pg_is_in_recovery()::text"))
}

// TestServerLoginRetryPatroniGate: with server_login_retry_patroni, a
// client waits for a refused server only while the local Patroni holds
// the leader lock; when it does not, or does not answer, the client gets
// 08006 at once, as without server_login_retry.
func TestServerLoginRetryPatroniGate(t *testing.T) {
	t.Run("lock held: the client waits for the restart", func(t *testing.T) {
		pat := startFakeLocalPatroni(t, true)
		r := startRetryRigWith(t, "100ms", "20s", "  server_login_retry_patroni: "+pat.srv.URL+"\n")
		ctx := context.Background()
		require.NoError(t, r.query(ctx))
		r.pg.Stop(t)
		servedAfter(t, func() error { return r.query(ctx) },
			r.poolStat(t, func(_, _, retries uint64) bool { return retries >= 2 }), func() { r.pg.Start(t) })
		require.Positive(t, metricValue(t, r.d, "pg_doorman_patroni_leader_lock_checks_total", "result", "held"))
		require.Zero(t, metricValue(t, r.d, "pg_doorman_server_login_retry_not_leader_total", "database", "postgres", "user", "rt"))
	})
	for _, tc := range []struct {
		name   string
		url    func(t *testing.T) string
		result string
	}{
		{"lock not held (demoted): 08006 at once", func(t *testing.T) string { return startFakeLocalPatroni(t, false).srv.URL }, "not_held"},
		{"Patroni does not answer (node loss): 08006 at once", func(t *testing.T) string {
			gone := httptest.NewServer(http.NotFoundHandler())
			gone.Close()
			return gone.URL
		}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRetryRigWith(t, "100ms", "20s", "  server_login_retry_patroni: "+tc.url(t)+"\n")
			ctx := context.Background()
			require.NoError(t, r.query(ctx))
			r.pg.Stop(t)
			start := time.Now()
			err := r.query(ctx)
			require.Error(t, err)
			require.Equal(t, "08006", sqlState(err), "%v", err)
			require.Less(t, time.Since(start), 5*time.Second, "not the 20 s of query_wait_timeout")
			require.True(t, r.poolStat(t, func(notLeader, _, retries uint64) bool { return notLeader >= 1 && retries == 0 })())
			require.Positive(t, metricValue(t, r.d, "pg_doorman_patroni_leader_lock_checks_total", "result", tc.result))
			require.Positive(t, metricValue(t, r.d, "pg_doorman_server_login_retry_not_leader_total", "database", "postgres", "user", "rt"))
		})
	}
}

// TestServerLoginRetryPatroniInRecovery: a leader that Patroni restarts in
// recovery (after a crash) is not handed to a waiting client until it is
// promoted, so the client's write succeeds instead of failing with 25006;
// on a node whose Patroni does not hold the lock (a replica) a server in
// recovery is handed out at once.
func TestServerLoginRetryPatroniInRecovery(t *testing.T) {
	t.Run("lock held: wait for the promotion", func(t *testing.T) {
		pat := startFakeLocalPatroni(t, true)
		r := startRetryRigWith(t, "100ms", "30s", "  server_login_retry_patroni: "+pat.srv.URL+"\n")
		ctx := context.Background()
		r.pg.Exec(t, "GRANT CREATE ON SCHEMA public TO rt")
		require.NoError(t, r.exec(ctx, "CREATE TABLE before_crash(x int)"))
		startInRecovery(t, r.pg)
		// Held while the server is in recovery; the write then reaches
		// the promoted server.
		servedAfter(t, func() error { return r.exec(ctx, "CREATE TABLE after_promotion(x int)") },
			r.poolStat(t, func(_, inRecovery, _ uint64) bool { return inRecovery >= 2 }), func() { r.pg.Promote(t) })
		require.Positive(t, metricValue(t, r.d, "pg_doorman_server_connect_in_recovery_total", "database", "postgres", "user", "rt"))
	})
	t.Run("lock not held (a replica): served at once", func(t *testing.T) {
		pat := startFakeLocalPatroni(t, false)
		r := startRetryRigWith(t, "100ms", "30s", "  server_login_retry_patroni: "+pat.srv.URL+"\n")
		ctx := context.Background()
		r.pg.Exec(t, "GRANT CREATE ON SCHEMA public TO rt")
		require.NoError(t, r.query(ctx))
		startInRecovery(t, r.pg)
		require.NoError(t, r.query(ctx), "reads are served by the replica")
		err := r.exec(ctx, "CREATE TABLE on_replica(x int)")
		require.Equal(t, "25006", sqlState(err), "%v", err)
		require.True(t, r.poolStat(t, func(_, inRecovery, _ uint64) bool { return inRecovery == 0 })())
	})
}
