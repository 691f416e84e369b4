package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
)

func TestSafePoint(t *testing.T) {
	tests := []struct {
		name    string
		pending int
		partial bool
		status  byte
		want    bool
	}{
		{"simple query answered, idle", 0, false, protocol.TxIdle, true},
		{"Parse Bind Execute Sync answered, idle", 0, false, protocol.TxIdle, true},
		{"inside BEGIN", 0, false, protocol.TxInBlock, false},
		{"failed transaction block", 0, false, protocol.TxFailed, false},
		{"second pipelined Sync not yet answered", 1, false, protocol.TxIdle, false},
		{"Parse Bind sent after the last Sync", 0, true, protocol.TxIdle, false},
		{"messages after Sync inside a block", 0, true, protocol.TxInBlock, false},
		{"COPY FROM STDIN still running in its Query", 1, false, protocol.TxIdle, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, safePoint(tt.pending, tt.partial, tt.status))
		})
	}
}

func TestUnnamedParseQuery(t *testing.T) {
	tests := []struct {
		name   string
		body   []byte
		want   string
		wantOK bool
	}{
		{"no parameters", protocol.Parse{Query: "SELECT 1"}.Encode(nil)[5:], "SELECT 1", true},
		{"two parameter types", protocol.Parse{Query: "SELECT $1, $2", ParamOIDs: []uint32{23, 25}}.Encode(nil)[5:], "SELECT $1, $2", true},
		{"named", protocol.Parse{Name: "s1", Query: "SELECT 1"}.Encode(nil)[5:], "", false},
		{"no query terminator", []byte("\x00SELECT 1"), "", false},
		{"count without OIDs", []byte("\x00SELECT 1\x00\x00\x02"), "", false},
		{"bytes after the OIDs", []byte("\x00SELECT 1\x00\x00\x00junk"), "", false},
		{"empty", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, ok := unnamedParseQuery(tt.body)
			require.Equal(t, tt.wantOK, ok)
			if ok {
				require.Equal(t, tt.want, string(q))
			}
		})
	}
}
