//go:build linux

package daemon_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// The accept path's Poller (internal/fdconn) holds a TCP client's socket
// only while it logs in: a transaction-mode client leaves it for the
// transaction core, a session-mode client for a net.Conn of its own, and a
// client that goes away leaves it too.
func TestLoginSocketsHandedOn(t *testing.T) {
	setup(t)
	cfg := "general:\n  host: 127.0.0.1\n  port: {{PORT}}\n  unix_socket_dir: \"{{DIR}}\"\npools:\n"
	for _, p := range []struct{ name, mode string }{{"txdb", "transaction"}, {"sessdb", "session"}} {
		cfg += fmt.Sprintf("  %s:\n    server_host: 127.0.0.1\n    server_port: %d\n    server_database: benchdb\n    pool_mode: %s\n    users:\n      - username: bench\n        password: '%s'\n        pool_size: 4\n",
			p.name, pg.Port, p.mode, verifier)
	}
	d := apptest.Start(t, cfg)
	held := func(want int, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return d.Daemon.LoginSockets() == want }, 5*time.Second, 5*time.Millisecond,
			"%s: %d login sockets, want %d", what, d.Daemon.LoginSockets(), want)
	}
	ctx := context.Background()

	// A client that connects and says nothing is in the Poller.
	silent, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port))
	require.NoError(t, err)
	defer silent.Close()
	held(1, "a silent client")

	tx, err := dial(t, d, "txdb")
	require.NoError(t, err)
	defer tx.Close(ctx)
	var one int
	require.NoError(t, tx.QueryRow(ctx, "SELECT 1").Scan(&one))
	held(1, "after a transaction-mode client's query")

	sess, err := dial(t, d, "sessdb")
	require.NoError(t, err)
	defer sess.Close(ctx)
	for range 3 {
		require.NoError(t, sess.QueryRow(ctx, "SELECT 1").Scan(&one))
	}
	held(1, "after a session-mode client's queries")

	// A client that resets the connection in the middle of its startup
	// packet leaves the Poller, and nobody else notices.
	rst, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port))
	require.NoError(t, err)
	_, err = rst.Write([]byte{0, 0, 0, 40, 0, 3})
	require.NoError(t, err)
	held(2, "a client in the middle of its startup packet")
	require.NoError(t, rst.(*net.TCPConn).SetLinger(0))
	require.NoError(t, rst.Close())
	held(1, "after a reset")

	require.NoError(t, silent.Close())
	held(0, "after the silent client left")

	require.NoError(t, tx.QueryRow(ctx, "SELECT 2").Scan(&one))
	require.Equal(t, 2, one)
	require.NoError(t, sess.QueryRow(ctx, "SELECT 3").Scan(&one))
	require.Equal(t, 3, one)
}
