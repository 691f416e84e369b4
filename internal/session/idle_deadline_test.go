package session_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

// TestIdleDeadlineLeavesSlowClientsAlone: the deadline of the wait for a
// client's next message stays set from one message to the next
// (stallGuard.idleWait). It must end no read it is not meant for: a pause
// inside a header, a pause inside a body (with proxy_copy_data_timeout and
// without it), a query that runs longer than the wait, a pause inside a
// transaction. Each pause is longer than idleRelease (100 ms).
func TestIdleDeadlineLeavesSlowClientsAlone(t *testing.T) {
	const pause = 250 * time.Millisecond
	long := hmQuery("SELECT '" + strings.Repeat("y", 4000) + "'")
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	type step struct {
		send    []byte
		answers int // ReadyForQuery messages that follow it
	}
	tests := []struct {
		name  string
		extra string
		steps []step // written in turn, with a pause between two
	}{
		{name: "pause inside a header", steps: []step{{hmQuery("SELECT 1")[:3], 0}, {hmQuery("SELECT 1")[3:], 1}}},
		// The first query waits for the header after it: the client loop
		// sends what the client sent together in one write.
		{name: "pause inside a header that follows a query", steps: []step{
			{cat(hmQuery("SELECT 1"), hmQuery("SELECT 2")[:3]), 0}, {hmQuery("SELECT 2")[3:], 2}}},
		{name: "pause inside a body", steps: []step{{long[:40], 0}, {long[40:], 1}}},
		{name: "pause inside a body, proxy_copy_data_timeout 0", extra: "  proxy_copy_data_timeout: 0s",
			steps: []step{{long[:40], 0}, {long[40:], 1}}},
		{name: "a query longer than the wait, then another at once", steps: []step{
			{cat(hmQuery("SELECT pg_sleep(0.3)"), hmQuery("SELECT 2")), 2}}},
		{name: "pauses inside a transaction", steps: []step{{hmQuery("BEGIN"), 1}, {hmQuery("SELECT 3"), 1}, {hmQuery("COMMIT"), 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := start(t, tt.extra, "transaction", 2)
			c := hmRaw(t, d)
			fe := pgproto3.NewFrontend(c, c) // one for the connection: answers may come in one read
			answer := func(step int) {
				t.Helper()
				require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
				for {
					m, err := fe.Receive()
					require.NoError(t, err, "step %d: no answer, or the session ended", step)
					switch m := m.(type) {
					case *pgproto3.ErrorResponse:
						t.Fatalf("step %d: %s %s", step, m.Code, m.Message)
					case *pgproto3.ReadyForQuery:
						return
					}
				}
			}
			// A first query leaves the idle wait's deadline set.
			_, err := c.Write(hmQuery("SELECT 0"))
			require.NoError(t, err)
			answer(-1)
			for i, st := range tt.steps {
				if i > 0 {
					// Not synchronisation: the client is slow on purpose. The
					// first step comes at once, while the deadline the wait
					// before it set is still pending.
					time.Sleep(pause)
				}
				_, err := c.Write(st.send)
				require.NoError(t, err, "step %d", i)
				for range st.answers {
					answer(i)
				}
			}
		})
	}
}
