package authquery_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// TestLookupFails: when the lookup query fails, a new user gets 08P01 and
// a clear message, users already in the cache keep logging in (also past
// cache_ttl), and the failures are counted.
func TestLookupFails(t *testing.T) {
	d := start(t, "", "      cache_ttl: 200ms")
	known := newRole(t, "pw", "md5")
	require.Equal(t, known, currentUser(t, d, known, "pw"))
	fresh := newRole(t, "pw", "md5")

	pg.ExecDB(t, "aqdb", "REVOKE EXECUTE ON FUNCTION pg_doorman_get_auth(TEXT) FROM doorman_auth")
	t.Cleanup(func() { pg.ExecDB(t, "aqdb", "GRANT EXECUTE ON FUNCTION pg_doorman_get_auth(TEXT) TO doorman_auth") })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := login(ctx, d, fresh, "pw")
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "08P01", pe.Code)
	require.Contains(t, pe.Message, "authentication lookup failed")
	require.NotContains(t, pe.Message, "permission denied", "the cause stays in the log")

	// The known user logs in on every try: from the cache, then, once its
	// entry passed cache_ttl, from the expired entry after a failed lookup.
	deadline := time.Now().Add(10 * time.Second)
	for authQueryStat(t, d, "executor_errors") < 2 {
		require.True(t, time.Now().Before(deadline), "the known user's entry never expired into a failed lookup")
		require.Equal(t, known, currentUser(t, d, known, "pw"))
	}
	require.Equal(t, known, currentUser(t, d, known, "pw"), "an expired entry is used while the lookup fails")

	pg.ExecDB(t, "aqdb", "GRANT EXECUTE ON FUNCTION pg_doorman_get_auth(TEXT) TO doorman_auth")
	require.Equal(t, fresh, currentUser(t, d, fresh, "pw"), "logins work again once the lookup does")
}

// TestPostgresRestartDuringLookups: logins that need a lookup keep coming
// while PostgreSQL restarts; each ends within its timeout with a login or
// a PostgreSQL-style error, and once PostgreSQL is back lookups work on
// fresh executor connections.
func TestPostgresRestartDuringLookups(t *testing.T) {
	d := start(t, "", "      cache_failure_ttl: 1ms")
	warm := newRole(t, "pw", "scram-sha-256")
	require.Equal(t, warm, currentUser(t, d, warm, "pw"))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var logins, failures atomic.Int64
	var unexpected sync.Map
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				_, err := pgx.Connect(ctx, d.DSN(fmt.Sprintf("ghost_%d_%d", w, i), "x", "aqdb"))
				cancel()
				logins.Add(1)
				switch code := sqlstate(err); code {
				case "28P01", "08P01":
					failures.Add(1)
				case "":
					if err != nil && !strings.Contains(err.Error(), "connection refused") {
						unexpected.Store(err.Error(), true)
					}
				default:
					unexpected.Store(code+" "+err.Error(), true)
				}
			}
		}()
	}
	require.Eventually(t, func() bool { return logins.Load() > 20 }, 10*time.Second, 10*time.Millisecond)
	pg.Restart(t)
	n := logins.Load()
	require.Eventually(t, func() bool { return logins.Load() > n+20 }, 20*time.Second, 10*time.Millisecond, "logins go on after the restart")
	close(stop)
	wg.Wait()
	unexpected.Range(func(k, _ any) bool { t.Errorf("unexpected login result: %v", k); return true })

	fresh := newRole(t, "pw", "scram-sha-256")
	require.Equal(t, fresh, currentUser(t, d, fresh, "pw"), "a new user is looked up after the restart")
	t.Logf("%d logins during the test, %d refused", logins.Load(), failures.Load())
}

// TestDynamicPoolCollected: an auth_query pool nobody uses is closed in
// the retain cycle once its server connections are gone, unless it keeps
// min_pool_size connections.
func TestDynamicPoolCollected(t *testing.T) {
	tests := []struct {
		name, extra string
		collected   bool
	}{
		{"min_pool_size 0", "", true},
		{"min_pool_size 1", "      min_pool_size: 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := start(t, "  retain_connections_time: 200ms\n  idle_timeout: 300ms", tt.extra)
			user := newRole(t, "pw", "md5")
			require.Equal(t, user, currentUser(t, d, user, "pw"))
			require.EqualValues(t, 1, d.Daemon.Pools.Dynamic("aqdb").Current)
			gone := func() bool { return d.Daemon.Pools.Dynamic("aqdb").Collected == 1 }
			if tt.collected {
				require.Eventually(t, gone, 15*time.Second, 50*time.Millisecond)
				for _, p := range show(t, d, "POOLS") {
					require.NotEqual(t, user, p["user"], "SHOW POOLS no longer lists it")
				}
				require.Equal(t, user, currentUser(t, d, user, "pw"), "the next login makes a new pool")
				require.EqualValues(t, 2, d.Daemon.Pools.Dynamic("aqdb").Created)
				return
			}
			require.Never(t, gone, 2*time.Second, 100*time.Millisecond)
		})
	}
}

// TestReloadKeepsDynamicPools: RELOAD keeps auth_query pools in use (an
// open transaction goes on), applies the new pool_size to them and starts
// the cache afresh.
func TestReloadKeepsDynamicPools(t *testing.T) {
	d := start(t, "", "      pool_size: 3")
	user := newRole(t, "pw", "scram-sha-256")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := login(ctx, d, user, "pw")
	require.NoError(t, err)
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	require.Equal(t, 1, authQueryStat(t, d, "cache_entries"))

	d.WriteConfig(t, config("", "      pool_size: 5"))
	require.NoError(t, d.Daemon.Reload())

	var again int
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&again))
	require.Equal(t, pid, again, "the transaction kept its server connection")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 0, authQueryStat(t, d, "cache_entries"), "RELOAD empties the cache")
	var size string
	for _, p := range show(t, d, "POOLS") {
		if p["user"] == user {
			size = "listed"
		}
	}
	require.Equal(t, "listed", size)
	p, ok := findPool(d, user)
	require.True(t, ok)
	require.Equal(t, 5, p.Settings().User.PoolSize)
	require.Equal(t, user, currentUser(t, d, user, "pw"))
}

// TestLookupConcurrencyBound: a burst of 60 logins with distinct unknown
// names runs at most `workers` lookups at a time, on at most `workers`
// executor connections (counted in pg_stat_activity).
func TestLookupConcurrencyBound(t *testing.T) {
	d := start(t, "", "") // the template sets workers: 2
	most := burst(t, d, "burst", 60)
	require.LessOrEqual(t, most, int64(2), "executor connections")
	require.GreaterOrEqual(t, most, int64(1))
	require.Equal(t, 60, authQueryStat(t, d, "executor_queries"))
}

// burst logs n distinct unknown names in at once (each must get 28P01)
// and returns the most executor connections pg_stat_activity showed
// meanwhile.
func burst(t *testing.T, d *apptest.Instance, prefix string, n int) int64 {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := pgx.Connect(ctx, d.DSN(fmt.Sprintf("%s_%d", prefix, i), "x", "aqdb"))
			if code := sqlstate(err); code != "28P01" {
				t.Errorf("login %d: %v", i, err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	most := int64(0)
	for {
		most = max(most, pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_doorman auth_query'"))
		select {
		case <-done:
			return most
		default:
		}
	}
}

// TestSettingWorkers: with workers 1 (the template's 2 is the default) a
// burst of unknown names runs its lookups on one executor connection.
func TestSettingWorkers(t *testing.T) {
	setup(t)
	cfg := strings.Replace(config("", ""), "workers: 2", "workers: 1", 1)
	require.Contains(t, cfg, "workers: 1")
	d := apptest.Start(t, cfg)
	require.Equal(t, int64(1), burst(t, d, "burst1", 30), "one executor connection")
	require.Equal(t, 30, authQueryStat(t, d, "executor_queries"))
}

// TestSettingCacheFailureTTL: a name that was not found stays refused
// while its failure is cached; once the role exists, a short
// cache_failure_ttl lets it in soon, the 30s default would not.
func TestSettingCacheFailureTTL(t *testing.T) {
	d := start(t, "", "      cache_failure_ttl: 300ms\n      min_interval: 10ms")
	roleSeq.Lock()
	roleSeq.n++
	name := fmt.Sprintf("aq_late_%d_%d", os.Getpid(), roleSeq.n)
	roleSeq.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := login(ctx, d, name, "late-secret")
	require.Equal(t, "28P01", sqlstate(err), "unknown yet: %v", err)

	pg.CreateUser(t, name, "late-secret", "scram-sha-256")
	pg.ExecDB(t, "aqdb", fmt.Sprintf("GRANT CONNECT ON DATABASE aqdb TO %s", name))
	t0 := time.Now()
	require.Eventually(t, func() bool {
		c, err := login(ctx, d, name, "late-secret")
		if err != nil {
			return false
		}
		_ = c.Close(ctx)
		return true
	}, 10*time.Second, 50*time.Millisecond, "in once the cached failure expired")
	require.Less(t, time.Since(t0), 5*time.Second, "well before the 30s default")
}

// TestSettingDatabase: auth_query.database is where the lookup runs. A
// pool whose own database lacks the lookup function logs its users in
// when the key names the database that has it, and fails the lookup
// without the key.
func TestSettingDatabase(t *testing.T) {
	setup(t)
	otherOnce.Do(func() {
		pg.CreateDatabase(t, "aqother")
		pg.ExecDB(t, "aqother", "GRANT ALL ON SCHEMA public TO PUBLIC")
	})
	user := newRole(t, "db-secret", "scram-sha-256")
	pg.ExecDB(t, "aqother", fmt.Sprintf("GRANT CONNECT ON DATABASE aqother TO %s", user))
	for _, withKey := range []bool{true, false} {
		t.Run(fmt.Sprint(withKey), func(t *testing.T) {
			key := ""
			if withKey {
				key = "      database: aqdb"
			}
			// The package's config, its pool renamed: aqother's database
			// has no lookup function.
			cfg := strings.Replace(config("", key), "pools:\n  aqdb:", "pools:\n  aqother:", 1)
			require.Contains(t, cfg, "  aqother:")
			d := apptest.Start(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, d.DSN(user, "db-secret", "aqother"))
			if !withKey {
				require.Equal(t, "08P01", sqlstate(err), "the lookup fails in aqother: %v", err)
				require.ErrorContains(t, err, "auth_query")
				return
			}
			require.NoError(t, err)
			var db string
			require.NoError(t, c.QueryRow(ctx, "SELECT current_database()").Scan(&db))
			require.Equal(t, "aqother", db, "the client's database is the pool's")
			require.NoError(t, c.Close(ctx))
		})
	}
}

var otherOnce sync.Once
