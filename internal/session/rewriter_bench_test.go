package session

import (
	"slices"
	"testing"

	"github.com/doorman-go/doorman/internal/protocol"
)

// BenchmarkRewriter is the statement rewriter's own cost per transaction,
// without sockets: one op is a client's request through Client and the
// server's answer through Server and emitFakes, message by message, as
// forward and pump call them (the session's lock left out). The cases are
// the requests of pgbench's select-only script: -M prepared (Bind of a
// named statement prepared once, Execute, Sync) and -M extended (Parse of
// the unnamed statement, Bind, Execute, Sync).
func BenchmarkRewriter(b *testing.B) {
	row := protocol.DataRow{Values: [][]byte{[]byte("4711")}}.Encode(nil)
	prepared := [][]byte{
		protocol.Bind{Statement: "P_0", Params: [][]byte{[]byte("42")}}.Encode(nil),
		execute, syncMsg,
	}
	extended := [][]byte{
		protocol.Parse{Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1"}.Encode(nil),
		protocol.Bind{Params: [][]byte{[]byte("42")}}.Encode(nil),
		execute, syncMsg,
	}
	cases := []struct {
		name    string
		setup   [][]byte // sent once before timing (the named Parse)
		request [][]byte
		answer  [][]byte
		want    []string // what the server gets, as describe names it
	}{
		{"prepared", [][]byte{parse("P_0", "SELECT abalance FROM pgbench_accounts WHERE aid = $1")}, prepared,
			[][]byte{bindComplete, row, commandComplete, rfq}, []string{"B:DOORMAN_1", "E", "S"}},
		{"extended unnamed", nil, extended,
			[][]byte{parseComplete, bindComplete, row, commandComplete, rfq}, []string{"P:", "B:", "E", "S"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			g := newRWRig()
			out := make([]byte, 0, 4096)
			transaction := func() {
				out = out[:0]
				for _, f := range tc.request {
					out = g.r.Client(g.a, protocol.Frame(f), out)
				}
				out = out[:0]
				for _, m := range tc.answer {
					f := protocol.Frame(m)
					if !answersRequest(f.Type()) && !g.r.fakesDue() {
						out = append(out, f...)
						continue
					}
					out = g.r.emitFakes(out)
					if !g.r.Server(g.a, f.Type(), f.Body()) {
						out = append(out, f...)
					}
					out = g.r.emitFakes(out)
				}
				g.r.planSet = ""
			}
			for _, f := range tc.setup { // prepared once, as a driver does
				out = g.r.Client(g.a, protocol.Frame(f), out[:0])
				g.answer(g.a, parseComplete, rfq)
			}
			sent := g.send(g.a, tc.request...)
			got := g.answer(g.a, tc.answer...)
			if !slices.Equal(sent, tc.want) || len(got) != len(tc.answer) {
				b.Fatalf("the server gets %q (want %q), the client %q", sent, tc.want, got)
			}
			for range 10 {
				transaction()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				transaction()
			}
		})
	}
}
