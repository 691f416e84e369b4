package daemon_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// TestHost: general.host is the address the TCP listener binds: with
// 127.0.0.2 (Linux routes all of 127/8 to loopback) a client reaches it
// there and is refused on 127.0.0.1, which every other test uses.
func TestHost(t *testing.T) {
	cfg := strings.Replace(config(t, ""), "host: 127.0.0.1\n  port:", "host: 127.0.0.2\n  port:", 1)
	require.Contains(t, cfg, "host: 127.0.0.2")
	d := apptest.Start(t, cfg)
	require.Equal(t, "127.0.0.2", d.Daemon.Addr().(*net.TCPAddr).IP.String())

	_, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port), 2*time.Second)
	require.Error(t, err, "nothing listens on 127.0.0.1")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, strings.Replace(d.DSN("bench", "bench-secret", "benchdb"), "host=127.0.0.1", "host=127.0.0.2", 1))
	require.NoError(t, err)
	var one int
	require.NoError(t, c.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.NoError(t, c.Close(ctx))
}
