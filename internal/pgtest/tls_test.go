package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

func TestTLSServer(t *testing.T) {
	t.Parallel()
	certs, err := testcerts.New(t.TempDir())
	require.NoError(t, err)
	c := Start(t, Options{TLS: certs, ExtraHba: []string{"hostssl all tls_user 127.0.0.1/32 scram-sha-256"}})
	c.CreateUser(t, "tls_user", "pw", "scram-sha-256")
	dsn := func(mode, ca string) string {
		return fmt.Sprintf("host=localhost port=%d user=tls_user password=pw dbname=postgres sslmode=%s sslrootcert=%s", c.Port, mode, ca)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn("verify-full", certs.CA.Cert))
	require.NoError(t, err)
	var ssl bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl))
	require.True(t, ssl)
	require.NoError(t, conn.Close(ctx))
	_, err = pgx.Connect(ctx, dsn("verify-full", certs.WrongCA.Cert))
	require.Error(t, err, "a server certificate from another CA is refused")
}
