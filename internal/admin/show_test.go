package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/pool"
)

// encodeDecode runs a result set through the wire encoding and pgx's
// decoder.
func encodeDecode(t *testing.T, rs resultSet) result {
	t.Helper()
	res, _ := decode(t, rs.encode(nil))
	require.Len(t, res, 1)
	require.Equal(t, "SHOW", res[0].Tag)
	require.Equal(t, rs.names(), res[0].Columns)
	return res[0]
}

func TestShowPoolsRow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   poolSnap
		want map[string]string
	}{
		{"idle pool",
			poolSnap{Database: "db", User: "u", Mode: "transaction"},
			map[string]string{"cl_active": "0", "sv_idle": "0", "maxwait": "0", "maxwait_us": "0", "pool_mode": "transaction", "paused": "0"}},
		{"busy pool",
			poolSnap{Database: "db", User: "u", Mode: "session", ClActive: 3, ClWaiting: 2,
				Conns: pool.Stats{Idle: 1, Busy: 4, Creating: 2, MaxWait: 2*time.Second + 345678*time.Microsecond, Paused: true}},
			map[string]string{"cl_active": "3", "cl_waiting": "2", "sv_active": "4", "sv_idle": "1", "sv_login": "2",
				"maxwait": "2", "maxwait_us": "345678", "pool_mode": "session", "paused": "1",
				"cl_active_cancel_req": "0", "sv_used": "0", "sv_tested": "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			row := encodeDecode(t, showPools([]poolSnap{tt.in})).row(t, "db", "u")
			for k, v := range tt.want {
				require.NotNil(t, row[k], k)
				require.Equal(t, v, *row[k], k)
			}
		})
	}
}

func TestShowDatabasesAndUsers(t *testing.T) {
	t.Parallel()
	pools := []poolSnap{
		{Database: "a", User: "zed", Mode: "session", Host: "h", Port: 5433, ServerDatabase: "real_a",
			PoolSize: 10, MinPoolSize: 2, ReservePool: 3, MaxDBConnections: 50, ServerLifetime: 90 * time.Second,
			Conns: pool.Stats{Total: 4, Paused: true}},
		{Database: "b", User: "amy", Mode: "transaction"},
		{Database: "c", User: "zed", Mode: "transaction"},
	}
	row := encodeDecode(t, showDatabases(pools)).row(t, "a")
	want := map[string]string{
		"host": "h", "port": "5433", "database": "real_a", "force_user": "zed", "pool_size": "10",
		"min_pool_size": "2", "reserve_pool": "3", "server_lifetime": "90", "pool_mode": "session",
		"max_connections": "50", "current_connections": "4", "paused": "1", "disabled": "0",
	}
	for k, v := range want {
		require.Equal(t, v, *row[k], k)
	}
	users := encodeDecode(t, showUsers(pools))
	require.Equal(t, [][]*string{{str("amy"), str("transaction")}, {str("zed"), str("session")}}, users.Rows,
		"sorted by name, first pool's mode")
}

func TestShowSockets(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	rows := []socketSnap{
		{Type: "C", User: "u", Database: "db", State: "active", Addr: "10.0.0.1", Port: 5555,
			LocalAddr: "10.0.0.2", LocalPort: 6432, ConnectTime: at, Request: at.Add(time.Second),
			Wait: 1500 * time.Millisecond, Ptr: "0xc1", Link: "0xs1", AppName: "psql"},
		{Type: "S", User: "u", Database: "db", State: "idle", Addr: "unix", Port: 5432, Ptr: "0xs2", RemotePID: 4242},
	}
	res := encodeDecode(t, showSockets(rows))
	c := res.row(t, "C")
	for k, v := range map[string]string{
		"state": "active", "addr": "10.0.0.1", "port": "5555", "local_port": "6432",
		"connect_time": "2024-05-06 07:08:09 UTC", "request_time": "2024-05-06 07:08:10 UTC",
		"wait": "1", "wait_us": "500000", "ptr": "0xc1", "link": "0xs1", "application_name": "psql",
		"remote_pid": "0", "tls": "",
	} {
		require.Equal(t, v, *c[k], k)
	}
	s := res.row(t, "S")
	require.Nil(t, s["connect_time"], "zero time is NULL")
	require.Equal(t, "4242", *s["remote_pid"])
	require.Equal(t, "", *s["link"])
}

func TestShowLists(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Pools["a"], cfg.Pools["b"] = &config.Pool{}, &config.Pool{}
	pools := []poolSnap{
		{User: "x", Conns: pool.Stats{Total: 2}},
		{User: "y", Conns: pool.Stats{Total: 3}},
		{User: "x"},
	}
	clients := []socketSnap{{State: "login"}, {State: "idle"}, {State: "active"}}
	res := encodeDecode(t, showLists(countLists(cfg, pools, clients)))
	want := map[string]string{
		"databases": "2", "users": "2", "peers": "0", "pools": "3", "peer_pools": "0",
		"free_clients": "0", "used_clients": "3", "login_clients": "1",
		"free_servers": "0", "used_servers": "5", "dns_names": "0",
	}
	for k, v := range want {
		require.Equal(t, v, *res.row(t, k)["items"], k)
	}
	require.Equal(t, "databases", *res.Rows[0][0], "PgBouncer's order")
	require.Equal(t, "dns_pending", *res.Rows[len(res.Rows)-1][0])
}

func TestShowConfig(t *testing.T) {
	t.Parallel()
	settings := []config.Setting{{Key: "port", Value: "6432"}, {Key: "admin_password", Value: config.Mask}, {Key: "new_key", Value: "v"}}
	defaults := []config.Setting{{Key: "port", Value: "5432"}, {Key: "admin_password", Value: config.Mask}}
	res := encodeDecode(t, showConfig(settings, defaults))
	require.Equal(t, [][]*string{
		{str("port"), str("6432"), str("5432"), str("no")},
		{str("admin_password"), str(config.Mask), str(config.Mask), str("yes")},
		{str("new_key"), str("v"), str(""), str("yes")},
	}, res.Rows)
}

func TestEncodeNullAndPanicOnBadRow(t *testing.T) {
	t.Parallel()
	rs := resultSet{Columns: []column{textCol("a"), int4Col("b")}, Rows: [][]cell{{nil, i4(-3)}, {text(""), i4(0)}}}
	res := encodeDecode(t, rs)
	require.Equal(t, [][]*string{{nil, str("-3")}, {str(""), str("0")}}, res.Rows, "nil is NULL, empty is empty")
	bad := resultSet{Columns: []column{textCol("a")}, Rows: [][]cell{{text("x"), text("y")}}}
	require.PanicsWithValue(t, "BUG: admin: row has 2 values for 1 columns", func() { bad.encode(nil) })
}
