package rolecheck

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func fakeOpts(port int, method Method) Options {
	return Options{Host: "127.0.0.1", Port: port, User: "u", Database: "d", Role: RolePrimary, Method: method, Timeout: 2 * time.Second}
}

func TestTerminateBeforeClose(t *testing.T) {
	tests := []struct {
		method Method
		want   string // message types the client sent after startup
	}{
		{MethodHotStandby, "X"},
		{MethodRecovery, "QX"},
	}
	for _, tt := range tests {
		t.Run(string(tt.method), func(t *testing.T) {
			f := startFakeServer(t, "off")
			v, st, err := Check(context.Background(), fakeOpts(f.port(), tt.method))
			require.NoError(t, err)
			require.True(t, v.Match, v.Reason)
			require.Equal(t, "15.0-fake", st.Version)
			require.Eventually(t, func() bool { return len(f.recorded()) == 1 }, 5*time.Second, 5*time.Millisecond)
			require.Equal(t, tt.want, string(f.recorded()[0]))
		})
	}
}

func TestNoHotStandbyParameter(t *testing.T) {
	f := startFakeServer(t, "")
	_, _, err := Check(context.Background(), fakeOpts(f.port(), MethodHotStandby))
	require.ErrorIs(t, err, ErrNoHotStandby)
	// The query method still works on such a server.
	v, _, err := Check(context.Background(), fakeOpts(f.port(), MethodRecovery))
	require.NoError(t, err)
	require.True(t, v.Match)
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	_, _, err = Check(context.Background(), fakeOpts(port, MethodHotStandby))
	require.ErrorContains(t, err, "connection refused")
}

// TestTimeout: a listener that accepts and never answers must fail the
// check within the timeout, not hang.
func TestTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	})
	o := fakeOpts(ln.Addr().(*net.TCPAddr).Port, MethodHotStandby)
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, _, err = Check(context.Background(), o)
	took := time.Since(start)
	require.ErrorContains(t, err, "i/o timeout")
	require.GreaterOrEqual(t, took, 250*time.Millisecond)
	require.Less(t, took, 2*time.Second)
}

func TestEvaluate(t *testing.T) {
	primary := State{Addr: "p:1", LagBytes: 0}
	replica := State{Addr: "r:1", InRecovery: true, LagBytes: 1000}
	unknown := State{Addr: "r:1", InRecovery: true, LagBytes: -1}
	tests := []struct {
		name   string
		st     State
		role   Role
		maxLag int64
		match  bool
		reason string
	}{
		{"primary wants primary", primary, RolePrimary, 0, true, "p:1 is primary"},
		{"primary wants replica", primary, RoleReplica, 0, false, "p:1 is primary, want replica"},
		{"primary wants any", primary, RoleAny, 0, true, "p:1 is primary"},
		{"primary ignores lag", primary, RolePrimary, 1, true, "p:1 is primary"},
		{"replica wants primary", replica, RolePrimary, 0, false, "r:1 is replica, want primary"},
		{"replica wants replica", replica, RoleReplica, 0, true, "r:1 is replica, replication lag 1000 bytes"},
		{"replica within lag", replica, RoleReplica, 1000, true, "r:1 is replica, replication lag 1000 bytes"},
		{"replica over lag", replica, RoleReplica, 999, false, "r:1 is replica, replication lag 1000 bytes exceeds 999B"},
		{"replica over lag any", replica, RoleAny, 512, false, "exceeds 512B"},
		{"lag unknown with limit", unknown, RoleReplica, 1 << 20, false, "lag unknown"},
		{"lag unknown no limit", unknown, RoleReplica, 0, true, "r:1 is replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(tt.st, tt.role, tt.maxLag)
			require.Equal(t, tt.match, v.Match)
			require.Contains(t, v.Reason, tt.reason)
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"16MB", 16 << 20, false},
		{"16mb", 16 << 20, false},
		{"512kB", 512 << 10, false},
		{"1 GB", 1 << 30, false},
		{"2TB", 2 << 40, false},
		{"1048576", 1 << 20, false},
		{"100B", 100, false},
		{"0", 0, false},
		{"", 0, true},
		{"-1MB", 0, true},
		{"12XB", 0, true},
		{"99999999999TB", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	require.Equal(t, "16MB", FormatSize(16<<20))
	require.Equal(t, "1000B", FormatSize(1000))
	require.Equal(t, "64kB", FormatSize(64<<10))
}

func TestParseRoleMethod(t *testing.T) {
	for in, want := range map[string]Role{"primary": RolePrimary, "master": RolePrimary, "Replica": RoleReplica, "standby": RoleReplica, "any": RoleAny} {
		got, err := ParseRole(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseRole("leader-ish")
	require.Error(t, err)
	for in, want := range map[string]Method{"hot_standby": MethodHotStandby, "in_hot_standby": MethodHotStandby, "recovery": MethodRecovery, "pg_is_in_recovery": MethodRecovery} {
		got, err := ParseMethod(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err = ParseMethod("ping")
	require.Error(t, err)
}

func TestNormalize(t *testing.T) {
	o, err := Options{User: "u"}.Normalize()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:5432", o.Addr())
	require.Equal(t, "u", o.Database)
	require.Equal(t, RolePrimary, o.Role)
	require.Equal(t, MethodHotStandby, o.Method)
	require.Equal(t, DefaultTimeout, o.Timeout)
	_, err = Options{Port: 70000, Role: "x"}.Normalize()
	require.ErrorContains(t, err, "user is required")
	require.ErrorContains(t, err, "port 70000")
	require.ErrorContains(t, err, `unknown role "x"`)
	require.Equal(t, "/run/pg/.s.PGSQL.6432", Options{Host: "/run/pg/", Port: 6432}.Addr())
}
