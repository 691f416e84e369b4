package rolecheck

import (
	"context"

	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
)

const (
	checkUser = "rolecheck"
	checkPass = "check-secret-42"
	md5User   = "rolecheck_md5"
)

// pair is a primary with one streaming replica and a check user on both.
type pair struct {
	primary, replica *pgtest.Cluster
}

func startPair(t *testing.T, opts pgtest.Options) pair {
	t.Helper()
	p := pgtest.Start(t, opts)
	p.CreateUser(t, checkUser, checkPass, "scram-sha-256")
	p.CreateUser(t, md5User, checkPass, "md5")
	r := p.AddReplica(t)
	p.WaitReplay(t, r)
	return pair{primary: p, replica: r}
}

func opts(c *pgtest.Cluster, role Role, method Method) Options {
	return Options{Host: c.Host, Port: c.Port, User: checkUser, Password: checkPass, Database: "postgres", Role: role, Method: method}
}

// TestCluster runs every check that needs a real primary and replica against
// one shared pair (subtests are sequential: some pause replay).
func TestCluster(t *testing.T) {
	pp := startPair(t, pgtest.Options{})
	t.Run("MethodRole", func(t *testing.T) { testMethodRole(t, pp) })
	t.Run("Auth", func(t *testing.T) { testAuth(t, pp) })
	t.Run("MaxLag", func(t *testing.T) { testMaxLag(t, pp) })
	t.Run("Sidecar", func(t *testing.T) { testSidecar(t, pp) })
	t.Run("TCPCheckBytes", func(t *testing.T) { testTCPCheckBytes(t, pp) })
	t.Run("CleanTerminate", func(t *testing.T) { testCleanTerminate(t, pp) })
}

func testMethodRole(t *testing.T, pp pair) {
	servers := map[string]*pgtest.Cluster{"primary": pp.primary, "replica": pp.replica}
	for _, method := range []Method{MethodHotStandby, MethodRecovery} {
		for srvName, srv := range servers {
			for _, role := range []Role{RolePrimary, RoleReplica, RoleAny} {
				want := role == RoleAny || string(role) == srvName
				t.Run(fmt.Sprintf("%s/%s/want_%s", method, srvName, role), func(t *testing.T) {
					v, st, err := Check(context.Background(), opts(srv, role, method))
					require.NoError(t, err)
					require.Equal(t, srvName == "replica", st.InRecovery)
					require.Equal(t, want, v.Match, v.Reason)
					require.Contains(t, v.Reason, srv.Addr())
					require.NotEmpty(t, st.Version)
				})
			}
		}
	}
}

func testAuth(t *testing.T, pp pair) {
	tests := []struct {
		name     string
		user     string
		password string
		wantErr  error
		wantCode string
	}{
		{name: "scram ok", user: checkUser, password: checkPass},
		{name: "md5 ok", user: md5User, password: checkPass},
		{name: "scram wrong password", user: checkUser, password: "wrong-password-1", wantCode: "28P01"},
		{name: "md5 wrong password", user: md5User, password: "wrong-password-2", wantCode: "28P01"},
		{name: "no password", user: checkUser, wantErr: ErrNoPassword},
		{name: "unknown user", user: "nobody_here", password: "x-secret", wantCode: "28P01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(pp.primary, RolePrimary, MethodRecovery)
			o.User, o.Password = tt.user, tt.password
			v, _, err := Check(context.Background(), o)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			case tt.wantCode != "":
				var se *ServerError
				require.ErrorAs(t, err, &se)
				require.Equal(t, tt.wantCode, se.Code)
				require.True(t, se.AuthFailed())
				require.NotContains(t, err.Error(), tt.password)
			default:
				require.NoError(t, err)
				require.True(t, v.Match, v.Reason)
			}
		})
	}
}

func testMaxLag(t *testing.T, pp pair) {
	o := opts(pp.replica, RoleReplica, MethodHotStandby)
	o.MaxLag = 64 << 10
	v, st, err := Check(context.Background(), o)
	require.NoError(t, err)
	require.True(t, v.Match, v.Reason)
	require.GreaterOrEqual(t, st.LagBytes, int64(0))

	// Pause replay, write a few MB on the primary and wait until the
	// replica has received (but not replayed) them.
	pp.replica.Exec(t, "select pg_wal_replay_pause()")
	t.Cleanup(func() { pp.replica.Exec(t, "select pg_wal_replay_resume()") })
	pp.primary.Exec(t, "create table lag_filler as select g, repeat('x', 200) as pad from generate_series(1, 20000) g")
	for _, method := range []Method{MethodHotStandby, MethodRecovery} {
		o.Method = method
		require.Eventually(t, func() bool {
			v, st, err = Check(context.Background(), o)
			return err == nil && !v.Match
		}, 10*time.Second, 50*time.Millisecond, "replica never lagged: %+v %v", st, err)
		require.Contains(t, v.Reason, "exceeds 64kB")
		require.Greater(t, st.LagBytes, int64(64<<10))

		big := o
		big.MaxLag = 1 << 30
		v, _, err = Check(context.Background(), big)
		require.NoError(t, err)
		require.True(t, v.Match, v.Reason)
	}
	pp.replica.Exec(t, "select pg_wal_replay_resume()")
	o.Method = MethodRecovery
	require.Eventually(t, func() bool {
		v, _, err := Check(context.Background(), o)
		return err == nil && v.Match
	}, 10*time.Second, 50*time.Millisecond)
}

func testCleanTerminate(t *testing.T, pp pair) {
	for _, method := range []Method{MethodHotStandby, MethodRecovery} {
		o := opts(pp.primary, RolePrimary, method)
		o.ApplicationName = "terminate_" + string(method)
		for range 3 {
			_, _, err := Check(context.Background(), o)
			require.NoError(t, err)
		}
	}
	log := pp.primary.ReadLog(t)
	require.NotContains(t, log, "Connection reset by peer")
	require.NotContains(t, log, "unexpected EOF on client connection")
}
