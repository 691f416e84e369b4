package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/doorman-go/doorman/internal/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backendAuth is a minimal PostgreSQL backend: it authenticates one client
// with the given function and then waits for Terminate.
type backendAuth func(b *pgproto3.Backend) error

func scramBackend(v auth.SCRAMVerifier, srv **auth.SCRAMServer) backendAuth {
	return func(b *pgproto3.Backend) error {
		s := auth.NewSCRAMServer(v, nil)
		*srv = s
		b.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{auth.SCRAMMechanism}})
		if err := b.Flush(); err != nil {
			return err
		}
		if err := b.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
			return err
		}
		msg, err := b.Receive()
		if err != nil {
			return err
		}
		initial, ok := msg.(*pgproto3.SASLInitialResponse)
		if !ok || initial.AuthMechanism != auth.SCRAMMechanism {
			return fmt.Errorf("unexpected %#v", msg)
		}
		serverFirst, err := s.ClientFirst(initial.Data)
		if err != nil {
			return err
		}
		b.Send(&pgproto3.AuthenticationSASLContinue{Data: serverFirst})
		if err := b.Flush(); err != nil {
			return err
		}
		if err := b.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
			return err
		}
		if msg, err = b.Receive(); err != nil {
			return err
		}
		resp, ok := msg.(*pgproto3.SASLResponse)
		if !ok {
			return fmt.Errorf("unexpected %#v", msg)
		}
		serverFinal, err := s.ClientFinal(resp.Data)
		if err != nil {
			return err
		}
		b.Send(&pgproto3.AuthenticationSASLFinal{Data: serverFinal})
		return nil
	}
}

func md5Backend(verifier string, salt [4]byte) backendAuth {
	return func(b *pgproto3.Backend) error {
		b.Send(&pgproto3.AuthenticationMD5Password{Salt: salt})
		if err := b.Flush(); err != nil {
			return err
		}
		if err := b.SetAuthType(pgproto3.AuthTypeMD5Password); err != nil {
			return err
		}
		msg, err := b.Receive()
		if err != nil {
			return err
		}
		pw, ok := msg.(*pgproto3.PasswordMessage)
		if !ok {
			return fmt.Errorf("unexpected %#v", msg)
		}
		if !auth.CheckMD5(verifier, salt, pw.Password) {
			return auth.ErrAuthFailed
		}
		return nil
	}
}

func serveOne(conn net.Conn, authenticate backendAuth) error {
	defer conn.Close()
	b := pgproto3.NewBackend(conn, conn)
	if _, err := b.ReceiveStartupMessage(); err != nil {
		return err
	}
	if err := authenticate(b); err != nil {
		b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: "password authentication failed"})
		_ = b.Flush()
		return err
	}
	b.Send(&pgproto3.AuthenticationOk{})
	b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := b.Flush(); err != nil {
		return err
	}
	msg, err := b.Receive()
	if err != nil {
		return err
	}
	if _, ok := msg.(*pgproto3.Terminate); !ok {
		return fmt.Errorf("unexpected %#v", msg)
	}
	return nil
}

// connectPgx logs pgx's own client in to the fake backend; it returns the
// client's and the backend's errors.
func connectPgx(t *testing.T, password string, authenticate backendAuth) (clientErr, serverErr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := pgconn.ParseConfig("host=127.0.0.1 port=5432 user=user database=db sslmode=disable")
	require.NoError(t, err)
	cfg.Password = password
	clientSide, serverSide := net.Pipe()
	cfg.DialFunc = func(context.Context, string, string) (net.Conn, error) { return clientSide, nil }
	done := make(chan error, 1)
	go func() { done <- serveOne(serverSide, authenticate) }()
	conn, clientErr := pgconn.ConnectConfig(ctx, cfg)
	if clientErr == nil {
		clientErr = conn.Close(ctx)
	} else {
		clientSide.Close()
	}
	return clientErr, <-done
}

func TestPgxClientAgainstSCRAMServer(t *testing.T) {
	v, err := auth.ParseSCRAMVerifier("SCRAM-SHA-256$4096:Sw6iHe2bRGDBoT2QTMXvcQ==$eYWNGWvZ47QPVeWOpVsSso9h2YK2nZGYidKEZxMrG/s=:oqXcjPUyfsikyFDW8QhLT/q6eY7H9NTpBRfNOE6eKPc=")
	require.NoError(t, err)

	var srv *auth.SCRAMServer
	clientErr, serverErr := connectPgx(t, "pencil", scramBackend(v, &srv))
	require.NoError(t, clientErr)
	require.NoError(t, serverErr)
	clientKey := srv.ClientKey()
	require.Len(t, clientKey, 32)

	// Passthrough: the recovered key logs in to a second server with the
	// same verifier.
	c := auth.NewSCRAMClientKeys(clientKey, v.ServerKey, nil)
	s2 := auth.NewSCRAMServer(v, nil)
	sf, err := s2.ClientFirst(c.ClientFirst())
	require.NoError(t, err)
	cf, err := c.ServerFirst(sf)
	require.NoError(t, err)
	final, err := s2.ClientFinal(cf)
	require.NoError(t, err)
	require.NoError(t, c.ServerFinal(final))

	clientErr, serverErr = connectPgx(t, "wrong", scramBackend(v, &srv))
	require.ErrorContains(t, clientErr, "28P01")
	require.ErrorIs(t, serverErr, auth.ErrAuthFailed)
	require.Nil(t, srv.ClientKey())
}

func TestPgxClientAgainstMD5(t *testing.T) {
	verifier := auth.MD5Verifier("user", "secret")
	salt := [4]byte{0xde, 0xad, 0xbe, 0xef}
	clientErr, serverErr := connectPgx(t, "secret", md5Backend(verifier, salt))
	require.NoError(t, clientErr)
	require.NoError(t, serverErr)

	clientErr, serverErr = connectPgx(t, "Secret", md5Backend(verifier, salt))
	require.ErrorContains(t, clientErr, "28P01")
	require.True(t, errors.Is(serverErr, auth.ErrAuthFailed))
}
