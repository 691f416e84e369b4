package admin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
)

// A broken or oversized admin message is answered with a FATAL error
// before the console stops; a message under the bound runs.
func TestConsoleReadLimits(t *testing.T) {
	t.Parallel()
	c, _ := newTestConsole(t, testConfig)
	const limit = 64 << 10 // session.MaxAdminMessage
	tests := []struct {
		name     string
		in       []byte
		wantCode string // "" = a normal answer, no error
	}{
		{"command under the limit", protocol.Query{String: "SHOW VERSION" + strings.Repeat(" ", limit-100)}.Encode(nil), ""},
		{"command over the limit", protocol.Query{String: "SHOW VERSION" + strings.Repeat(" ", limit)}.Encode(nil), "54000"},
		{"length below 4", []byte{'Q', 0, 0, 0, 3}, "08P01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := c.serve(context.Background(), protocol.NewReader(bytes.NewReader(tt.in), 0, limit),
				func(b []byte) error { out.Write(b); return nil })
			results, _ := decode(t, out.Bytes())
			if tt.wantCode == "" {
				require.NoError(t, err, "the input ends with EOF")
				require.NotEmpty(t, results)
				require.True(t, results[0].Err == nil, "no error expected")
				return
			}
			require.Error(t, err)
			require.Len(t, results, 1)
			require.NotNil(t, results[0].Err)
			require.Equal(t, "FATAL", results[0].Err.Severity)
			require.Equal(t, tt.wantCode, results[0].Err.Code)
		})
	}
}
