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
