package bdd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// client is one named application connection through pg_doorman.
type client struct {
	conn *pgx.Conn
	tx   pgx.Tx // open transaction, if any

	backendPID int              // PostgreSQL backend serving the open transaction
	killedAt   time.Time        // when that backend was killed
	pending    chan queryResult // result of a query started in the background
}

// queryResult is how a background query ended and when.
type queryResult struct {
	err error
	at  time.Time
}

// connect opens a connection through pg_doorman; the scenario's cleanup
// closes it.
func (s *scenario) connect(db, user, password string) (*pgx.Conn, error) {
	if err := s.needDoorman(); err != nil {
		return nil, err
	}
	return s.connectDSN(s.doorman.dsn(user, password, db))
}

// connectDSN is connect with a DSN of the caller's.
func (s *scenario) connectDSN(dsn string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s.t.Cleanup(func() { closeConn(conn) })
	return conn, nil
}

// closeConn closes a connection without waiting long for a dead peer.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// client returns the named client.
func (s *scenario) client(name string) (*client, error) {
	c, ok := s.clients[name]
	if !ok {
		return nil, fmt.Errorf("no client %q in this scenario", name)
	}
	return c, nil
}

// sqlState returns the SQLSTATE of a PostgreSQL error, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// hasErrorCode reports whether raw protocol bytes from a server hold an
// ErrorResponse ('E') whose code field ('C') is code.
func hasErrorCode(raw []byte, code string) bool {
	for len(raw) >= 5 {
		n := int(binary.BigEndian.Uint32(raw[1:5]))
		if n < 4 || len(raw) < 1+n {
			return false
		}
		body := raw[5 : 1+n]
		if raw[0] == 'E' {
			for _, field := range bytes.Split(body, []byte{0}) {
				if len(field) > 0 && field[0] == 'C' && string(field[1:]) == code {
					return true
				}
			}
		}
		raw = raw[1+n:]
	}
	return false
}
