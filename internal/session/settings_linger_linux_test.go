//go:build linux

package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
)

// TestSettingTCPSoLinger: when a logged-in client leaves (Terminate),
// tcp_so_linger 0, the default, ends its connection with a reset and a
// positive value with a FIN, on the transaction core as on a session's
// goroutine (session mode). A last word (KILL) closes gracefully whatever
// the setting, so that the client reads it.
func TestSettingTCPSoLinger(t *testing.T) {
	terminate := []byte{'X', 0, 0, 0, 4}
	for _, tt := range []struct {
		name   string
		linger int
		mode   string
		kill   bool
		want   []string // how the stream ends, after the FATAL of a kill
	}{
		{"0, core, Terminate", 0, "transaction", false, []string{"reset"}},
		{"5, core, Terminate", 5, "transaction", false, []string{"EOF"}},
		{"0, session mode, Terminate", 0, "session", false, []string{"reset"}},
		{"5, session mode, Terminate", 5, "session", false, []string{"EOF"}},
		{"0, core, KILL", 0, "transaction", true, []string{"E FATAL 58006 pooler is shut down now", "EOF"}},
		{"0, session mode, KILL", 0, "session", true, []string{"E FATAL 58006 pooler is shut down now", "EOF"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			general := fmt.Sprintf("  tcp_so_linger: %d", tt.linger)
			if tt.mode == "transaction" {
				skipWithoutCore(t)
				general += "\n  transaction_loop: true"
			}
			d := start(t, general, tt.mode, 2)
			c := newRawClient(t, d.DSN("app", "app-secret", "appdb"))
			require.NoError(t, c.roundTrip(protocol.Query{String: "SELECT 1"}.Encode(nil)))
			s := sessionOf(t, d, c.nc)
			if tt.mode == "transaction" {
				require.Eventually(t, s.InCore, 5*time.Second, 5*time.Millisecond, "the core owns the idle client")
			}
			if tt.kill {
				s.Kill("58006", "pooler is shut down now")
			} else {
				_, err := c.nc.Write(terminate)
				require.NoError(t, err)
			}
			hc := &hsConn{t: t, nc: c.nc}
			require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(5*time.Second)))
			var got []string
			for range tt.want {
				m, _ := hc.message()
				got = append(got, m)
			}
			require.Equal(t, tt.want, got)
		})
	}
}
