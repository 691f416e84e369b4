package backend_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
	"github.com/doorman-go/doorman/internal/rawio"
	"github.com/doorman-go/doorman/internal/servertls"
)

// observer records what Connect reports.
type observer struct {
	mu         sync.Mutex
	handshakes int
	failures   []string
	open       int
}

func (o *observer) TLSHandshakeDone(time.Duration) { o.mu.Lock(); o.handshakes++; o.mu.Unlock() }
func (o *observer) TLSHandshakeFailed(r string) {
	o.mu.Lock()
	o.failures = append(o.failures, r)
	o.mu.Unlock()
}
func (o *observer) TLSConnOpened() { o.mu.Lock(); o.open++; o.mu.Unlock() }
func (o *observer) TLSConnClosed() { o.mu.Lock(); o.open--; o.mu.Unlock() }

func material(t *testing.T, f servertls.Files) *servertls.Material {
	t.Helper()
	m, err := servertls.Load(f)
	require.NoError(t, err)
	return m
}

// TestConnectTLS: Connect against a real ssl=on PostgreSQL and a plaintext
// one: the error texts an operator reads, the observer's events, the raw
// socket under TLS for Alive, and no TLS over a unix socket.
func TestConnectTLS(t *testing.T) {
	t.Parallel()
	certs, err := testcerts.New(t.TempDir())
	require.NoError(t, err)
	tlsPG := pgtest.Start(t, pgtest.Options{TLS: certs})
	plainPG := pgtest.Start(t, pgtest.Options{ExtraHba: []string{"host all app_reject 127.0.0.1/32 reject"}})
	tlsPG.CreateUser(t, "app", "pw", "scram-sha-256")
	plainPG.CreateUser(t, "app", "pw", "scram-sha-256")
	plainPG.CreateUser(t, "app_reject", "pw", "scram-sha-256")
	opts := func(c *pgtest.Cluster, m *servertls.Material, obs backend.TLSObserver) backend.Options {
		network, addr := backend.Address("127.0.0.1", c.Port)
		return backend.Options{Network: network, Address: addr, Database: "postgres", ConnectTimeout: 10 * time.Second,
			Credentials: backend.Credentials{User: "app", Password: "pw"}, TLS: m, TLSObserver: obs}
	}
	ctx := context.Background()

	t.Run("require against a server without TLS", func(t *testing.T) {
		obs := &observer{}
		_, err := backend.Connect(ctx, opts(plainPG, material(t, servertls.Files{Mode: "require"}), obs))
		var te *backend.TLSError
		require.ErrorAs(t, err, &te)
		require.Equal(t, servertls.ReasonRefused, te.Reason)
		require.ErrorContains(t, err, "(server_tls_mode require): the server does not accept TLS (answered SSLRequest with N")
		var ce *backend.ConnectError
		require.NotErrorAs(t, err, &ce, "a live server refusing TLS is not a dead server (fallback)")
		require.Equal(t, []string{servertls.ReasonRefused}, obs.failures)
	})

	t.Run("verify-full, idle TLS connection probed on the raw socket", func(t *testing.T) {
		obs := &observer{}
		c, err := backend.Connect(ctx, opts(tlsPG, material(t, servertls.Files{Mode: "verify-full", CACert: certs.CA.Cert}), obs))
		require.NoError(t, err)
		require.Regexp(t, `^TLSv1\.3/`, c.TLS)
		require.Equal(t, 1, obs.handshakes)
		require.Equal(t, 1, obs.open)
		require.NoError(t, c.Exec(ctx, "SELECT 1"))
		require.True(t, c.Alive(), "nothing pending on the socket under TLS")
		tlsPG.Exec(t, "SELECT pg_terminate_backend($1)", int(c.PID))
		require.Eventually(t, func() bool { return !c.Alive() }, 10*time.Second, 10*time.Millisecond,
			"the FATAL and close of a terminated backend are seen through TLS")
		require.NoError(t, c.Close())
		_ = c.Close() // the pool's destroy after the session closed the socket
		require.Equal(t, 0, obs.open, "closed twice, counted once")
	})

	t.Run("verify-full over a unix socket is plaintext, as libpq", func(t *testing.T) {
		o := opts(tlsPG, material(t, servertls.Files{Mode: "verify-full", CACert: certs.WrongCA.Cert}), nil)
		o.Network, o.Address = backend.Address(tlsPG.SocketDir, tlsPG.Port)
		o.Credentials = backend.Credentials{User: "postgres"} // local trust
		c, err := backend.Connect(ctx, o)
		require.NoError(t, err)
		require.Empty(t, c.TLS)
		require.NoError(t, c.Close())
	})

	t.Run("allow does not retry a wrong password", func(t *testing.T) {
		obs := &observer{}
		o := opts(plainPG, material(t, servertls.Files{Mode: "allow"}), obs)
		o.Credentials.Password = "wrong"
		_, err := backend.Connect(ctx, o)
		var se *backend.ServerError
		require.ErrorAs(t, err, &se)
		require.Equal(t, "28P01", se.Code)
		require.NotErrorAs(t, err, new(*backend.TLSError), "no TLS attempt after a wrong password")
		require.Empty(t, obs.failures)
	})

	t.Run("allow: plaintext refused by pg_hba, no TLS on the server", func(t *testing.T) {
		obs := &observer{}
		o := opts(plainPG, material(t, servertls.Files{Mode: "allow"}), obs)
		o.Credentials.User = "app_reject"
		_, err := backend.Connect(ctx, o)
		var se *backend.ServerError
		require.ErrorAs(t, err, &se, "the server's refusal leads")
		require.Equal(t, "28000", se.Code)
		var te *backend.TLSError
		require.ErrorAs(t, err, &te, "and the TLS retry's failure follows")
		require.Equal(t, servertls.ReasonRefused, te.Reason)
		require.Equal(t, []string{servertls.ReasonRefused}, obs.failures)
	})

	t.Run("prefer without TLS on the server", func(t *testing.T) {
		obs := &observer{}
		c, err := backend.Connect(ctx, opts(plainPG, material(t, servertls.Files{Mode: "prefer"}), obs))
		require.NoError(t, err)
		require.Empty(t, c.TLS)
		require.Empty(t, obs.failures, "'N' is an answer prefer accepts")
		require.NoError(t, c.Close())
	})

	t.Run("the descriptor of a plaintext connection", func(t *testing.T) {
		c, err := backend.Connect(ctx, opts(plainPG, nil, nil))
		require.NoError(t, err)
		defer c.Close()
		fd := -1
		require.NoError(t, rawio.Control(c.NetConn(), func(f uintptr) { fd = int(f) }))
		require.Positive(t, fd)
		require.Equal(t, fd, c.Descriptor(), "the transaction core finds its state of a server by it")
		require.Equal(t, -1, (&backend.Conn{}).Descriptor(), "a Conn not dialled has none")
	})
}
