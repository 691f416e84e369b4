package session_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
)

// rawClient logs in with pgconn and then speaks the wire protocol itself,
// so that what allocates in this process during a transaction is the
// pooler (which runs in the test process), not a driver.
type rawClient struct {
	nc  net.Conn
	buf []byte
}

func newRawClient(t *testing.T, dsn string) *rawClient {
	t.Helper()
	pc, err := pgconn.Connect(context.Background(), dsn)
	require.NoError(t, err)
	hc, err := pc.Hijack()
	require.NoError(t, err)
	t.Cleanup(func() { _ = hc.Conn.Close() })
	return &rawClient{nc: hc.Conn, buf: make([]byte, 64<<10)}
}

// roundTrip writes msg and reads until ReadyForQuery, reusing its buffer.
func (c *rawClient) roundTrip(msg []byte) error {
	if _, err := c.nc.Write(msg); err != nil {
		return err
	}
	var have int
	for {
		for have >= 5 {
			n := 1 + (int(c.buf[1])<<24 | int(c.buf[2])<<16 | int(c.buf[3])<<8 | int(c.buf[4]))
			if have < n {
				break
			}
			if c.buf[0] == protocol.MsgReadyForQuery {
				return nil
			}
			copy(c.buf, c.buf[n:have])
			have -= n
		}
		m, err := c.nc.Read(c.buf[have:])
		if err != nil {
			return err
		}
		if m == 0 {
			return io.ErrNoProgress
		}
		have += m
	}
}

// The forward path allocates nothing per transaction once warm:
// the whole process, pooler included, is measured by AllocsPerRun, and
// must be 0 per transaction.
func TestForwardPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	simple := protocol.Query{String: "SELECT 1"}.Encode(nil)
	var extended []byte
	extended = protocol.Parse{Query: "SELECT $1::int"}.Encode(extended)
	extended = protocol.Bind{Params: [][]byte{[]byte("7")}}.Encode(extended)
	extended = protocol.Execute{}.Encode(extended)
	extended = protocol.Sync{}.Encode(extended)
	tests := []struct {
		name     string
		prepared bool
		msg      []byte
		max      float64
	}{
		{"simple, rewriting off", false, simple, 0},
		{"extended unnamed, rewriting off", false, extended, 0},
		{"simple, rewriting on", true, simple, 0},
		{"extended unnamed, rewriting on", true, extended, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := "  prepared_statements: false"
			if tt.prepared {
				extra = "  prepared_statements: true"
			}
			d := start(t, extra, "transaction", 2)
			c := newRawClient(t, d.DSN("app", "app-secret", "appdb"))
			for i := 0; i < 50; i++ { // warm: pool, buffers, caches
				require.NoError(t, c.roundTrip(tt.msg))
			}
			allocs := testing.AllocsPerRun(500, func() {
				if err := c.roundTrip(tt.msg); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("%.2f allocations per transaction in the whole process", allocs)
			require.LessOrEqual(t, allocs, tt.max)
		})
	}
}

// pgconnConnect logs in and keeps only the socket, so that a test holding
// many idle clients holds no driver state for them.
func pgconnConnect(ctx context.Context, dsn string) (net.Conn, error) {
	pc, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	hc, err := pc.Hijack()
	if err != nil {
		return nil, err
	}
	return hc.Conn, nil
}
