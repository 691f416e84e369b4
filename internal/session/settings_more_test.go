package session_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// More settings, each shown to take effect: set to a value other than its
// default, the behaviour changes in a way the default would not give.

// TestSettingLegacyHbaList: general.hba as a list admits TCP clients from
// its addresses only (28000 otherwise, as a pg_hba miss); the unix socket
// is never subject to it.
func TestSettingLegacyHbaList(t *testing.T) {
	tests := []struct {
		list  string
		tcpOK bool
	}{
		{`["10.0.0.0/8"]`, false},
		{`["10.0.0.0/8", "127.0.0.0/8"]`, true},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			d := apptest.Start(t, seConfig(t, "  hba: "+tt.list, "", 2))
			c, err := pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
			if tt.tcpOK {
				require.NoError(t, err)
				require.NoError(t, c.Close(ctx))
			} else {
				var pe *pgconn.PgError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, "28000", pe.Code)
				require.Contains(t, pe.Message, "no pg_hba.conf entry")
			}
			u, err := pgx.Connect(ctx, d.SocketDSN("app", "app-secret", "appdb"))
			require.NoError(t, err, "the unix socket is not subject to the list")
			require.NoError(t, u.Close(ctx))
		})
	}
}

// TestSettingAdminUsername: the console is the configured admin user's;
// the default name is then an unknown user there.
func TestSettingAdminUsername(t *testing.T) {
	cfg := strings.Replace(seConfig(t, "", "", 2), "admin_username: admin", "admin_username: root", 1)
	require.Contains(t, cfg, "admin_username: root")
	d := apptest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := pgconn.Connect(ctx, d.DSN("root", "admin-secret", "pgdoorman"))
	require.NoError(t, err)
	res, err := pc.Exec(ctx, "SHOW VERSION").ReadAll()
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NotEmpty(t, res[0].Rows)
	require.NoError(t, pc.Close(ctx))

	_, err = pgconn.Connect(ctx, d.DSN("admin", "admin-secret", "pgdoorman"))
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe, "admin is not the console's user now")
	require.Equal(t, "28P01", pe.Code)
}

// TestSettingPoolerCheckQuery: the configured query, sent alone as a
// simple query, is answered by the pooler (an empty answer, no row);
// PostgreSQL would return one row. Anything else still reaches the server.
func TestSettingPoolerCheckQuery(t *testing.T) {
	for _, check := range []string{";", "SELECT 1"} {
		t.Run(check, func(t *testing.T) {
			d := apptest.Start(t, seConfig(t, fmt.Sprintf("  pooler_check_query: %q", check), "", 2))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pc, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
			require.NoError(t, err)
			defer pc.Close(ctx)
			res, err := pc.Exec(ctx, "SELECT 1").ReadAll()
			require.NoError(t, err)
			require.Len(t, res, 1)
			if check == "SELECT 1" {
				require.Empty(t, res[0].Rows, "answered by the pooler")
				require.Empty(t, res[0].CommandTag.String())
			} else {
				require.Equal(t, [][][]byte{{[]byte("1")}}, res[0].Rows, "answered by PostgreSQL")
			}
			res, err = pc.Exec(ctx, "SELECT 2").ReadAll()
			require.NoError(t, err)
			require.Equal(t, [][][]byte{{[]byte("2")}}, res[0].Rows)
		})
	}
}

// TestSettingConnectTimeout: a server that accepts the connection and
// never answers is given up after the pool's connect_timeout, well before
// the 3 s default (query_wait_timeout is set longer than both).
func TestSettingConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	cfg := seConfig(t, "  query_wait_timeout: 10s", "    connect_timeout: 300ms", 2)
	port := ln.Addr().(*net.TCPAddr).Port
	cfg = strings.Replace(cfg, fmt.Sprintf("server_port: %d", pg.Port), fmt.Sprintf("server_port: %d", port), 1)
	d := apptest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Now()
	_, err = pgx.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
	elapsed := time.Since(t0)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe, "the login fails: no server answers")
	require.Equal(t, "08006", pe.Code, "%s", pe.Message)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
	require.Less(t, elapsed, 2*time.Second, "given up after connect_timeout (300ms), not the 3s default")
	mu.Lock()
	n := len(held)
	mu.Unlock()
	require.Positive(t, n, "pg_doorman did connect to the silent server")
	t.Logf("gave up after %v, %d connects", elapsed, n)
}
