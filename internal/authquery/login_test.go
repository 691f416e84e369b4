package authquery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoginModes: users created after pg_doorman started log in through
// auth_query; passthrough keeps their identity on the server, dedicated
// mode uses server_user for all.
func TestLoginModes(t *testing.T) {
	tests := []struct {
		name, extra string
		encryption  string
		dedicated   bool
	}{
		{"passthrough, SCRAM role", "", "scram-sha-256", false},
		{"passthrough, MD5 role", "", "md5", false},
		{"dedicated, SCRAM role", "      server_user: shared_app\n      server_password: shared-secret", "scram-sha-256", true},
		{"dedicated, MD5 role", "      server_user: shared_app\n      server_password: shared-secret", "md5", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := start(t, "", tt.extra)
			user := newRole(t, "pw-1", tt.encryption)
			want := user
			if tt.dedicated {
				want = "shared_app"
			}
			require.Equal(t, want, currentUser(t, d, user, "pw-1"))
			require.Equal(t, want, currentUser(t, d, user, "pw-1"), "second login, from the cache")

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := login(ctx, d, user, "wrong")
			require.Equal(t, "28P01", sqlstate(err))
			_, err = login(ctx, d, "no_such_role", "x")
			require.Equal(t, "28P01", sqlstate(err))

			pools := show(t, d, "POOLS")
			var users []string
			for _, p := range pools {
				users = append(users, p["user"])
			}
			require.Contains(t, users, want, "SHOW POOLS lists the auth_query pool")
			require.Equal(t, 2, authQueryStat(t, d, "auth_success"))
			waitAuthQueryStat(t, d, "auth_failure", 2)
			require.Equal(t, 2, authQueryStat(t, d, "cache_hits"), "the wrong password is checked against the cache")
		})
	}
}

// TestPasswordChange: an MD5 password changed in PostgreSQL works at the
// next login (the failed check re-fetches and checks again); a SCRAM one
// at the login after the failed one. The old password stops working.
func TestPasswordChange(t *testing.T) {
	for _, enc := range []string{"md5", "scram-sha-256"} {
		t.Run(enc, func(t *testing.T) {
			d := start(t, "", "      min_interval: 1ms") // below the time an ALTER ROLE takes
			user := newRole(t, "old-pw", enc)
			require.Equal(t, user, currentUser(t, d, user, "old-pw"))
			pg.Exec(t, fmt.Sprintf("SET password_encryption = '%s'; ALTER ROLE %s PASSWORD 'new-pw'", enc, user))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if enc != "md5" {
				_, err := login(ctx, d, user, "new-pw")
				require.Equal(t, "28P01", sqlstate(err), "the SCRAM exchange ran with the old salt")
			}
			require.Equal(t, user, currentUser(t, d, user, "new-pw"))
			require.Eventually(t, func() bool {
				_, err := login(ctx, d, user, "old-pw")
				return sqlstate(err) == "28P01"
			}, 5*time.Second, 20*time.Millisecond)
			require.GreaterOrEqual(t, authQueryStat(t, d, "cache_refetches"), 1)
		})
	}
}

// TestDroppedRole: a role dropped in PostgreSQL cannot log in once its
// cache entry expires.
func TestDroppedRole(t *testing.T) {
	d := start(t, "", "      cache_ttl: 300ms")
	user := newRole(t, "pw", "scram-sha-256")
	require.Equal(t, user, currentUser(t, d, user, "pw"))
	pg.ExecDB(t, "aqdb", fmt.Sprintf("REVOKE CONNECT ON DATABASE aqdb FROM %s", user))
	pg.Exec(t, fmt.Sprintf("DROP ROLE %s", user))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.Eventually(t, func() bool {
		_, err := login(ctx, d, user, "pw")
		return sqlstate(err) == "28P01"
	}, 5*time.Second, 50*time.Millisecond)
}

// TestNegativeCaching: 200 logins of a user PostgreSQL does not have run
// one lookup, counted by PostgreSQL itself.
func TestNegativeCaching(t *testing.T) {
	d := start(t, "", "")
	before := lookups(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 200 {
		_, err := login(ctx, d, "intruder", "guess")
		require.Equal(t, "28P01", sqlstate(err), "attempt %d", i)
	}
	require.Equal(t, 1, authQueryStat(t, d, "executor_queries"))
	require.Equal(t, 199, authQueryStat(t, d, "cache_hits"))
	waitAuthQueryStat(t, d, "auth_failure", 200)
	waitLookups(t, before+1)
}

// TestSingleFlight: 100 simultaneous first logins of one user run one
// lookup.
func TestSingleFlight(t *testing.T) {
	d := start(t, "", "      pool_size: 10")
	user := newRole(t, "pw", "md5")
	before := lookups(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := login(ctx, d, user, "pw")
			if err == nil {
				err = c.Ping(ctx)
				c.Close(ctx)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, authQueryStat(t, d, "executor_queries"))
	waitLookups(t, before+1)
}
