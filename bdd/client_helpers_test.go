package bdd

import (
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

func TestHasErrorCode(t *testing.T) {
	t.Parallel()
	encode := func(msgs ...pgproto3.BackendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			var err error
			b, err = m.Encode(b)
			require.NoError(t, err)
		}
		return b
	}
	shutdown := &pgproto3.ErrorResponse{Severity: "FATAL", Code: "58006", Message: "pooler is shut down now"}
	tests := []struct {
		name string
		raw  []byte
		code string
		want bool
	}{
		{"error response alone", encode(shutdown), "58006", true},
		{"after a notice", encode(&pgproto3.NoticeResponse{Code: "01000", Message: "x"}, shutdown), "58006", true},
		{"other code", encode(shutdown), "57P01", false},
		{"code only in a notice", encode(&pgproto3.NoticeResponse{Code: "58006"}), "58006", false},
		{"code as the message text", encode(&pgproto3.ErrorResponse{Code: "XX000", Message: "C58006"}), "58006", false},
		{"nothing received", nil, "58006", false},
		{"truncated", encode(shutdown)[:10], "58006", false},
		{"bad length", []byte{'E', 0, 0, 0, 1}, "58006", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, hasErrorCode(tt.raw, tt.code))
		})
	}
}
