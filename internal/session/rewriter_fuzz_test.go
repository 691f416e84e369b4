package session

import (
	"encoding/binary"
	"testing"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/prepared"
	"github.com/doorman-go/doorman/internal/protocol"
)

// FuzzRewriter drives the rewriter with what a hostile client could send
// (well-formed and malformed Parse, Bind, Describe, Close, Execute, Sync
// and Query messages, statement names that collide) interleaved with the
// answers a server gives and with the attachment moving between two
// server connections. Whatever comes, the rewriter must not panic, what it
// sends the server and the client must be whole messages, its counters
// must agree with its queue, and its name maps must stay within their
// bounds.
func FuzzRewriter(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 5, 6, 9, 10, 14, 16})
	f.Add([]byte{0, 2, 0, 2, 4, 2, 6, 12, 9, 16, 3})
	f.Add([]byte{7, 3, 7, 4, 8, 'B', 3, 0, 'x', 0, 13, 15, 16, 17})
	f.Add([]byte{0, 1, 1, 1, 6, 13, 16, 17, 1, 1, 6, 9, 10, 16})
	f.Fuzz(func(t *testing.T, in []byte) {
		const names, serverMax = 4, 3
		st := &pooler.Stats{}
		r := &rewriter{names: prepared.NewClientMap(names), cache: prepared.NewCache(serverMax, "DOORMAN_"), stats: st, user: "app"}
		srv := func() *backend.Conn {
			return &backend.Conn{Prepared: prepared.NewServerSet(serverMax), Params: map[string]string{"session_authorization": "app"}}
		}
		conns := [2]*backend.Conn{srv(), srv()}
		cur := 0
		next := func() byte {
			if len(in) == 0 {
				return 0
			}
			b := in[0]
			in = in[1:]
			return b
		}
		name := func() string { return [...]string{"", "a", "b", "s1", "a\x01"}[next()%5] }
		query := func() string {
			return [...]string{"select 1", "select $1", "DEALLOCATE a", "DEALLOCATE ALL", "DISCARD ALL",
				"deallocate prepare b", "set search_path = x", "", "select 2"}[next()%9]
		}
		for steps := 0; len(in) > 0 && steps < 512; steps++ {
			var client, server []byte
			switch op := next() % 20; op {
			case 0:
				client = protocol.Parse{Name: name(), Query: query()}.Encode(nil)
			case 1:
				client = protocol.Bind{Portal: name(), Statement: name()}.Encode(nil)
			case 2:
				client = protocol.Describe{ObjectType: protocol.ObjectStatement, Name: name()}.Encode(nil)
			case 3:
				client = protocol.Describe{ObjectType: protocol.ObjectPortal, Name: name()}.Encode(nil)
			case 4:
				client = protocol.Close{ObjectType: protocol.ObjectStatement, Name: name()}.Encode(nil)
			case 5:
				client = protocol.Execute{}.Encode(nil)
			case 6:
				client = protocol.Sync{}.Encode(nil)
			case 7:
				client = protocol.Query{String: query()}.Encode(nil)
			case 8:
				// A client message of a rewritten kind with a body of
				// the input's bytes: truncated names, missing NULs.
				typ := [...]byte{protocol.MsgParse, protocol.MsgBind, protocol.MsgDescribe, protocol.MsgClose, protocol.MsgQuery}[next()%5]
				n := int(next() % 16)
				n = min(n, len(in))
				client = frame(typ, in[:n])
				in = in[n:]
			case 9:
				server = protocol.ParseComplete{}.Encode(nil)
			case 10:
				server = protocol.BindComplete{}.Encode(nil)
			case 11:
				server = protocol.CloseComplete{}.Encode(nil)
			case 12:
				server = frame(protocol.MsgRowDescription, []byte{0, 0})
			case 13:
				server = frame(protocol.MsgNoData, nil)
			case 14:
				tag := [...]string{"SELECT 1", "DEALLOCATE ALL", "DISCARD ALL", "DEALLOCATE"}[next()%4]
				server = protocol.CommandComplete{Tag: tag}.Encode(nil)
			case 15:
				server = protocol.AppendError(nil, "ERROR", "26000", "prepared statement does not exist")
			case 16:
				server = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(nil)
			case 17:
				// The attachment ends and the next one is on the other
				// server connection, as when a transaction is released.
				// The release clears the transaction's SETs
				// (serverloop.go) and bindServer the unnamed statement.
				r.detach()
				r.planSet = ""
				r.unnamedHere = false
				cur = 1 - cur
			case 18:
				server = frame(protocol.MsgEmptyQueryResponse, nil)
			case 19:
				server = frame(protocol.MsgPortalSuspended, nil)
			}
			if client != nil {
				out := r.Client(conns[cur], protocol.Frame(client), nil)
				checkFrames(t, "to server", out)
			}
			if server != nil {
				fr := protocol.Frame(server)
				var out []byte
				out = r.emitFakes(out)
				if !r.Server(conns[cur], fr.Type(), fr.Body()) {
					out = append(out, server...)
				}
				out = r.emitFakes(out)
				checkFrames(t, "to client", out)
			}
			fakes := 0
			for _, q := range r.queue[r.qhead:] {
				if q.fake {
					fakes++
				}
			}
			if got := int(r.fakes.Load()); got != fakes {
				t.Fatalf("fakes counter %d, queue holds %d fake answers", got, fakes)
			}
			if r.names.Len() > names {
				t.Fatalf("client names %d, bound %d", r.names.Len(), names)
			}
			for i, c := range conns {
				if c.Prepared.Len() > serverMax {
					t.Fatalf("server %d holds %d statements, bound %d", i, c.Prepared.Len(), serverMax)
				}
			}
		}
	})
}

// frame is a message of type typ with body, as on the wire.
func frame(typ byte, body []byte) []byte {
	b := make([]byte, 5, 5+len(body))
	b[0] = typ
	binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
	return append(b, body...)
}

// checkFrames fails t unless b is a sequence of whole messages.
func checkFrames(t *testing.T, dir string, b []byte) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 5 {
			t.Fatalf("%s: %d trailing bytes", dir, len(b))
		}
		n := int(binary.BigEndian.Uint32(b[1:5]))
		if n < 4 || 1+n > len(b) {
			t.Fatalf("%s: message %q declares length %d with %d bytes left", dir, b[0], n, len(b)-1)
		}
		b = b[1+n:]
	}
}
