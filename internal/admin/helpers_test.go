package admin

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/daemon"
	"github.com/doorman-go/doorman/internal/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig has two databases; "app" has two users. Nothing listens on
// the server port: no test here opens a server connection.
const testConfig = `
[general]
host = "127.0.0.1"
port = 6432
admin_username = "admin"
admin_password = "secret"
log_level = "info"

[pools.app]
server_host = "127.0.0.1"
server_port = 1
pool_mode = "transaction"

[[pools.app.users]]
username = "alice"
password = "md5c4ca4238a0b923820dcc509a6f75849b"
pool_size = 7
min_pool_size = 1

[[pools.app.users]]
username = "bob"
password = "md5c4ca4238a0b923820dcc509a6f75849b"
pool_mode = "session"

[pools.other]
server_host = "/var/run/postgresql"
server_port = 1
server_database = "real_other"

[[pools.other.users]]
username = "alice"
password = "md5c4ca4238a0b923820dcc509a6f75849b"
`

// newTestConsole builds a daemon (not listening) from cfgText written to a
// file, so that RELOAD can read it again.
func newTestConsole(t *testing.T, cfgText string) (*Console, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pg_doorman.toml")
	require.NoError(t, os.WriteFile(path, []byte(cfgText), 0o600))
	cfg, _, err := config.Load(path)
	require.NoError(t, err)
	d, err := daemon.New(cfg, zap.NewNop(), zap.NewAtomicLevelAt(zapcore.InfoLevel), daemon.Parts{})
	require.NoError(t, err)
	t.Cleanup(d.Pools.Close)
	return New(d, nil), path
}

// result is one command's answer as a client sees it.
type result struct {
	Columns []string
	OIDs    []uint32
	Rows    [][]*string
	Tag     string
	Err     *pgproto3.ErrorResponse
	Notices []pgproto3.NoticeResponse
	Empty   bool
}

// row returns the row whose first column is key; it fails if none.
func (r result) row(t *testing.T, key ...string) map[string]*string {
	t.Helper()
	for _, row := range r.Rows {
		match := true
		for i, k := range key {
			if row[i] == nil || *row[i] != k {
				match = false
			}
		}
		if match {
			m := map[string]*string{}
			for i, c := range r.Columns {
				m[c] = row[i]
			}
			return m
		}
	}
	t.Fatalf("no row %v in %v", key, r.Rows)
	return nil
}

// decode reads a server byte stream with pgx's pgproto3 (an independent
// decoder) into results; every Query cycle must end with ReadyForQuery 'I'.
func decode(t *testing.T, b []byte) (results []result, readyCount int) {
	t.Helper()
	cur := result{}
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), 5, "truncated header")
		n := 1 + int(binary.BigEndian.Uint32(b[1:5]))
		require.GreaterOrEqual(t, len(b), n, "truncated message")
		msg := backendMessage(t, b[0])
		require.NoError(t, msg.Decode(b[5:n]), "decode %q", b[0])
		b = b[n:]
		switch m := msg.(type) {
		case *pgproto3.RowDescription:
			for _, f := range m.Fields {
				cur.Columns = append(cur.Columns, string(f.Name))
				cur.OIDs = append(cur.OIDs, f.DataTypeOID)
			}
		case *pgproto3.DataRow:
			require.Len(t, m.Values, len(cur.Columns))
			row := make([]*string, len(m.Values))
			for i, v := range m.Values {
				if v != nil {
					s := string(v)
					row[i] = &s
				}
			}
			cur.Rows = append(cur.Rows, row)
		case *pgproto3.NoticeResponse:
			cur.Notices = append(cur.Notices, *m)
		case *pgproto3.CommandComplete:
			cur.Tag = string(m.CommandTag)
			results = append(results, cur)
			cur = result{}
		case *pgproto3.EmptyQueryResponse:
			cur.Empty = true
			results = append(results, cur)
			cur = result{}
		case *pgproto3.ErrorResponse:
			e := *m
			cur.Err = &e
			results = append(results, cur)
			cur = result{}
		case *pgproto3.ReadyForQuery:
			require.Equal(t, byte('I'), m.TxStatus)
			readyCount++
		default:
			t.Fatalf("unexpected message %T", msg)
		}
	}
	require.Equal(t, result{}.Tag, cur.Tag, "unterminated result")
	require.Empty(t, cur.Columns, "result without CommandComplete")
	return results, readyCount
}

// backendMessage returns an empty pgproto3 message for a type byte.
func backendMessage(t *testing.T, typ byte) pgproto3.BackendMessage {
	t.Helper()
	switch typ {
	case 'T':
		return &pgproto3.RowDescription{}
	case 'D':
		return &pgproto3.DataRow{}
	case 'N':
		return &pgproto3.NoticeResponse{}
	case 'C':
		return &pgproto3.CommandComplete{}
	case 'I':
		return &pgproto3.EmptyQueryResponse{}
	case 'E':
		return &pgproto3.ErrorResponse{}
	case 'Z':
		return &pgproto3.ReadyForQuery{}
	}
	t.Fatalf("unexpected message type %q", typ)
	return nil
}

// exchange runs the console loop over the given client messages and
// returns what it wrote and the loop's error.
func exchange(t *testing.T, c *Console, msgs ...[]byte) ([]byte, error) {
	t.Helper()
	var in []byte
	for _, m := range msgs {
		in = append(in, m...)
	}
	var out bytes.Buffer
	err := c.serve(context.Background(), protocol.NewReader(bytes.NewReader(in), 0, 1<<20), func(b []byte) error {
		out.Write(b)
		return nil
	})
	return out.Bytes(), err
}

// query runs one Query and returns its results.
func query(t *testing.T, c *Console, q string) []result {
	t.Helper()
	out, err := exchange(t, c, protocol.Query{String: q}.Encode(nil), protocol.Terminate{}.Encode(nil))
	require.NoError(t, err)
	res, ready := decode(t, out)
	require.Equal(t, 1, ready)
	return res
}

// query1 runs a Query holding one command and returns its result.
func query1(t *testing.T, c *Console, q string) result {
	t.Helper()
	res := query(t, c, q)
	require.Len(t, res, 1, "results of %q", q)
	return res[0]
}

func str(s string) *string { return &s }
