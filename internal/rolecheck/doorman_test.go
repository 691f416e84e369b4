package rolecheck

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// TestThroughDoorman checks the route a client of pg_doorman really uses:
// the pooler must report in_hot_standby from its backend, and the recovery
// query must run through it.
func TestThroughDoorman(t *testing.T) {
	p := pgtest.Start(t, pgtest.Options{})
	verifier := p.CreateUser(t, checkUser, checkPass, "scram-sha-256")
	r := p.AddReplica(t)
	p.WaitReplay(t, r)
	cfg := `general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
pools:
  postgres:
    server_host: 127.0.0.1
    server_port: %d
    pool_mode: transaction
    users:
      - username: %s
        password: '%s'
        pool_size: 2
`
	for _, srv := range []struct {
		name    string
		c       *pgtest.Cluster
		replica bool
	}{{"primary", p, false}, {"replica", r, true}} {
		d := apptest.Start(t, fmt.Sprintf(cfg, srv.c.Port, checkUser, verifier))
		for _, method := range []Method{MethodHotStandby, MethodRecovery} {
			t.Run(srv.name+"/"+string(method), func(t *testing.T) {
				o := Options{Host: "127.0.0.1", Port: d.Port, User: checkUser, Password: checkPass, Database: "postgres",
					Role: RolePrimary, Method: method}
				v, st, err := Check(context.Background(), o)
				require.NoError(t, err)
				require.Equal(t, srv.replica, st.InRecovery)
				require.Equal(t, !srv.replica, v.Match, v.Reason)
				o.Role = RoleReplica
				v, _, err = Check(context.Background(), o)
				require.NoError(t, err)
				require.Equal(t, srv.replica, v.Match, v.Reason)
				o.Password = "wrong-" + checkPass
				_, _, err = Check(context.Background(), o)
				require.Error(t, err)
				require.NotContains(t, err.Error(), o.Password)
			})
		}
	}
}
