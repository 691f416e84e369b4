package admin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/metrics"
	"github.com/doorman-go/doorman/internal/procnet"
	"github.com/doorman-go/doorman/internal/protocol"
)

// failureLog is a Metrics that keeps the reasons it is given.
type failureLog struct {
	mu      sync.Mutex
	reasons []string
}

func (f *failureLog) AdminCommandFailed(reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reasons = append(f.reasons, reason)
}

func (f *failureLog) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reasons...)
}

// TestFailuresCounted: every command the console refuses or that fails is
// counted once, by a reason from the fixed set; commands that succeed are
// not counted.
func TestFailuresCounted(t *testing.T) {
	t.Parallel()
	q := func(s string) []byte { return protocol.Query{String: s}.Encode(nil) }
	const limit = 64 << 10 // session.MaxAdminMessage
	tests := []struct {
		name  string
		setup func(t *testing.T, c *Console, path string)
		in    [][]byte
		want  []string
	}{
		{name: "commands that succeed", in: [][]byte{q("SHOW VERSION; SET client_encoding = 'UTF8'"), q(" ; "), q("-- ping")}},
		{name: "unknown command", in: [][]byte{q("SELECT 1")}, want: []string{FailSyntax}},
		{name: "bad argument", in: [][]byte{q("RELOAD now")}, want: []string{FailSyntax}},
		{name: "syntax error in a later statement", in: [][]byte{q("SHOW VERSION; bogus")}, want: []string{FailSyntax}},
		{name: "unterminated quote", in: [][]byte{q("SET log_level = 'debug")}, want: []string{FailSyntax}},
		{name: "no such database", in: [][]byte{q("PAUSE nope")}, want: []string{FailNoDatabase}},
		{name: "admin database", in: [][]byte{q("RECONNECT pgdoorman")}, want: []string{FailNotAllowed}},
		{name: "setting of the config file", in: [][]byte{q("SET port = 1")}, want: []string{FailNotAllowed}},
		{name: "unknown parameter", in: [][]byte{q("SET nope = 1")}, want: []string{FailUnknownParameter}},
		{name: "invalid log level", in: [][]byte{q("SET log_level = 'loud'")}, want: []string{FailInvalidValue}},
		{name: "execution stops at the first failure", in: [][]byte{q("PAUSE nope; SET nope = 1")}, want: []string{FailNoDatabase}},
		{name: "one per failed query", in: [][]byte{q("PAUSE nope"), q("SHOW VERSION"), q("SELECT 1")}, want: []string{FailNoDatabase, FailSyntax}},
		{name: "second upgrade request", in: [][]byte{q("UPGRADE; UPGRADE")}, want: []string{FailUpgrade}},
		{
			name: "reload of a broken file",
			setup: func(t *testing.T, _ *Console, path string) {
				require.NoError(t, os.WriteFile(path, []byte("[general]\nport = \"x\"\n"), 0o600))
			},
			in:   [][]byte{q("RELOAD")},
			want: []string{FailReload},
		},
		{
			name: "SHOW SOCKETS off Linux",
			setup: func(_ *testing.T, c *Console, _ string) {
				c.readSockets = func() (procnet.Counts, error) { return procnet.Counts{}, procnet.ErrUnsupported }
			},
			in:   [][]byte{q("SHOW SOCKETS")},
			want: []string{FailUnsupported},
		},
		{
			name: "SHOW SOCKETS cannot read /proc",
			setup: func(_ *testing.T, c *Console, _ string) {
				c.readSockets = func() (procnet.Counts, error) { return procnet.Counts{}, errors.New("permission denied") }
			},
			in:   [][]byte{q("SHOW SOCKETS")},
			want: []string{FailOther},
		},
		{
			name: "extended protocol, once until Sync",
			in: [][]byte{protocol.Parse{Query: "SHOW POOLS"}.Encode(nil), protocol.Bind{}.Encode(nil), protocol.Execute{}.Encode(nil),
				protocol.Sync{}.Encode(nil), q("SHOW VERSION")},
			want: []string{FailExtendedProtocol},
		},
		{name: "message of another type", in: [][]byte{protocol.CopyDone{}.Encode(nil)}, want: []string{FailProtocol}},
		{name: "malformed Query", in: [][]byte{{'Q', 0, 0, 0, 5, 'x'}}, want: []string{FailProtocol}},
		{name: "command over the length limit", in: [][]byte{q("SHOW VERSION" + strings.Repeat(" ", limit))}, want: []string{FailProtocol}},
		{name: "invalid length", in: [][]byte{{'Q', 0, 0, 0, 3}}, want: []string{FailProtocol}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, path := newTestConsole(t, testConfig)
			fl := &failureLog{}
			c.metrics = fl
			if tt.setup != nil {
				tt.setup(t, c, path)
			}
			_ = c.serve(context.Background(), protocol.NewReader(bytes.NewReader(bytes.Join(tt.in, nil)), 0, limit),
				func([]byte) error { return nil })
			require.Equal(t, tt.want, fl.got())
			for _, r := range fl.got() {
				require.Contains(t, FailureReasons, r)
			}
		})
	}
}

// TestFailureReasonsExported: the exporter starts every reason of the
// console at zero, has no other, and counts what the console reports.
func TestFailureReasonsExported(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	m := metrics.New(c.d)
	c.metrics = m
	require.NotNil(t, query1(t, c, "SELECT 1").Err)
	want := map[string]float64{}
	for _, r := range FailureReasons {
		want[r] = 0
	}
	want[FailSyntax] = 1
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "pg_doorman_admin_command_failures_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			require.Len(t, s.GetLabel(), 1)
			got[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
		}
	}
	require.Equal(t, want, got)
}
