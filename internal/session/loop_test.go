package session

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/protocol"
)

func TestLoopRequest(t *testing.T) {
	q := protocol.Query{String: "SELECT 1"}.Encode(nil)
	check := protocol.Query{String: "select 1"}.Encode(nil)
	unnamed := protocol.Parse{Query: "SELECT $1::int"}.Encode(nil)
	named := protocol.Parse{Name: "s1", Query: "SELECT 1"}.Encode(nil)
	bind := protocol.Bind{Params: [][]byte{[]byte("7")}}.Encode(nil)
	exec := protocol.Execute{}.Encode(nil)
	sync := protocol.Sync{}.Encode(nil)
	flush := []byte{protocol.MsgFlush, 0, 0, 0, 4}
	term := []byte{protocol.MsgTerminate, 0, 0, 0, 4}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name             string
		b                []byte
		fresh, rewriting bool
		frames           int
		ok               bool
	}{
		{"query", q, true, false, 1, true},
		{"two queries", cat(q, q), true, false, 2, true},
		{"extended unnamed", cat(unnamed, bind, exec, sync), true, true, 4, true},
		{"named parse, rewriting off", cat(named, bind, exec, sync), true, false, 4, true},
		{"named parse first, rewriting on", cat(named, bind, exec, sync), true, true, 0, false},
		{"named parse in a block, rewriting on", cat(named, bind, exec, sync), false, true, 4, true},
		{"sync first, rewriting on", sync, true, true, 0, false},
		{"flush in the middle", cat(unnamed, flush, bind, exec, sync), true, true, 5, true},
		{"no sync at the end", cat(unnamed, bind, exec), true, false, 0, false},
		{"flush at the end", cat(unnamed, flush), true, false, 0, false},
		{"check query", check, true, false, 0, false},
		{"check query in a block goes to the server", check, false, false, 1, true},
		{"partial message", q[:len(q)-1], true, false, 0, false},
		{"partial header", cat(q, q[:3]), true, false, 0, false},
		{"terminate", term, true, false, 0, false},
		{"length below 4", []byte{'Q', 0, 0, 0, 3}, true, false, 0, false},
		{"copy data", []byte{protocol.MsgCopyData, 0, 0, 0, 4}, true, false, 0, false},
		{"empty", nil, true, false, 0, false},
		{"sync with a body, as the goroutine path takes it", []byte{protocol.MsgSync, 0, 0, 0, 5, 0}, false, false, 1, true},
		{"sync over its length limit", append([]byte{protocol.MsgSync, 0, 0, 0x4e, 0x24}, make([]byte, 20000)...), false, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := loopRequest(tt.b, tt.fresh, tt.rewriting, "select 1")
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.frames, n)
		})
	}
}

func TestLoopServerTLS(t *testing.T) {
	for mode, want := range map[string]bool{"": false, "disable": false, "allow": false, "prefer": true, "require": true, "verify-full": true} {
		require.Equal(t, want, loopServerTLS(mode), mode)
	}
}
