package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/prepared"
	"github.com/doorman-go/doorman/internal/protocol"
)

// rwRig is a rewriter with its pool cache and two server connections,
// no PostgreSQL: the tests play the server's answers themselves.
type rwRig struct {
	r      *rewriter
	a, b   *backend.Conn
	stats  *pooler.Stats
	client []string // what the client was sent, as in describe
}

func newRWRig() *rwRig {
	st := &pooler.Stats{}
	srv := func() *backend.Conn {
		return &backend.Conn{Prepared: prepared.NewServerSet(100), Params: map[string]string{"session_authorization": "app"}}
	}
	return &rwRig{
		r: &rewriter{names: prepared.NewClientMap(0), cache: prepared.NewCache(100, "DOORMAN_"), stats: st, user: "app"},
		a: srv(), b: srv(), stats: st,
	}
}

// send runs client frames through Client for srv and describes what the
// server receives.
func (g *rwRig) send(srv *backend.Conn, frames ...[]byte) []string {
	var out []byte
	for _, f := range frames {
		out = g.r.Client(srv, protocol.Frame(f), out)
	}
	return describe(out, true)
}

// answer plays server messages through Server and emitFakes, as serverLoop
// does, and describes what the client receives.
func (g *rwRig) answer(srv *backend.Conn, frames ...[]byte) []string {
	var out []byte
	for _, f := range frames {
		fr := protocol.Frame(f)
		out = g.r.emitFakes(out)
		if !g.r.Server(srv, fr.Type(), fr.Body()) {
			out = append(out, f...)
		}
		out = g.r.emitFakes(out)
	}
	out = g.r.emitFakes(out)
	return describe(out, false)
}

// describe names each message of a byte stream: its type letter and, on
// the way to the server, the statement name of a Parse, Bind, Describe or
// Close (the letters mean other messages on the way back).
func describe(b []byte, toServer bool) []string {
	var out []string
	for len(b) >= 5 {
		n := int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4])
		f := protocol.Frame(b[:1+n])
		b = b[1+n:]
		d := string(f.Type())
		if !toServer {
			out = append(out, d)
			continue
		}
		switch f.Type() {
		case protocol.MsgParse:
			var p protocol.Parse
			_ = p.Decode(f.Body())
			d += ":" + p.Name
		case protocol.MsgBind:
			_, name, _ := protocol.BindNames(f.Body())
			d += ":" + string(name)
		case protocol.MsgDescribe, protocol.MsgClose:
			if _, name, err := protocol.ObjectName(f.Body()); err == nil {
				d += ":" + string(name)
			}
		}
		out = append(out, d)
	}
	return out
}

func parse(name, q string) []byte { return protocol.Parse{Name: name, Query: q}.Encode(nil) }
func bind(name string) []byte     { return protocol.Bind{Statement: name}.Encode(nil) }
func closeStmt(name string) []byte {
	return protocol.Close{ObjectType: protocol.ObjectStatement, Name: name}.Encode(nil)
}
func describeStmt(name string) []byte {
	return protocol.Describe{ObjectType: protocol.ObjectStatement, Name: name}.Encode(nil)
}

var (
	execute         = protocol.Execute{}.Encode(nil)
	syncMsg         = protocol.Sync{}.Encode(nil)
	parseComplete   = protocol.ParseComplete{}.Encode(nil)
	bindComplete    = protocol.BindComplete{}.Encode(nil)
	closeComplete   = protocol.CloseComplete{}.Encode(nil)
	commandComplete = protocol.CommandComplete{Tag: "SELECT 1"}.Encode(nil)
	rfq             = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(nil)
	errorResponse   = protocol.AppendError(nil, "ERROR", "42601", "syntax error")
)

// TestRewriter plays request/answer exchanges through the rewriter, each
// step naming what the server receives and what the client sees.
func TestRewriter(t *testing.T) {
	type step struct {
		second     bool     // use server connection b instead of a
		client     [][]byte // client messages
		wantServer []string
		answers    [][]byte // the server's messages
		wantClient []string
	}
	tests := []struct {
		name  string
		steps []step
		check func(t *testing.T, g *rwRig)
	}{
		{"named Parse gets the pool's name; the answer reaches the client", []step{{
			client: [][]byte{parse("s1", "SELECT 1"), syncMsg}, wantServer: []string{"P:DOORMAN_1", "S"},
			answers: [][]byte{parseComplete, rfq}, wantClient: []string{"1", "Z"},
		}}, func(t *testing.T, g *rwRig) {
			require.EqualValues(t, 1, g.stats.PreparedMisses.Load())
		}},
		{"Bind on a server that lacks the statement: Parse injected, its answer hidden", []step{
			{client: [][]byte{parse("s1", "SELECT 1"), syncMsg}, wantServer: []string{"P:DOORMAN_1", "S"},
				answers: [][]byte{parseComplete, rfq}, wantClient: []string{"1", "Z"}},
			{second: true, client: [][]byte{bind("s1"), execute, syncMsg}, wantServer: []string{"P:DOORMAN_1", "B:DOORMAN_1", "E", "S"},
				answers: [][]byte{parseComplete, bindComplete, commandComplete, rfq}, wantClient: []string{"2", "C", "Z"}},
		}, func(t *testing.T, g *rwRig) {
			require.EqualValues(t, 1, g.stats.PreparedInjected.Load())
		}},
		{"Parse of a statement the server has: answered by the pooler", []step{
			{client: [][]byte{parse("s1", "SELECT 1"), syncMsg}, wantServer: []string{"P:DOORMAN_1", "S"},
				answers: [][]byte{parseComplete, rfq}, wantClient: []string{"1", "Z"}},
			{client: [][]byte{closeStmt("s1"), parse("s2", "SELECT 1"), syncMsg}, wantServer: []string{"S"},
				answers: [][]byte{rfq}, wantClient: []string{"3", "1", "Z"}},
		}, func(t *testing.T, g *rwRig) {
			require.EqualValues(t, 1, g.stats.PreparedHits.Load(), "s2 is the same statement as s1 was")
			require.Nil(t, g.r.names.Get("s1"), "Close forgets the client's name only")
			require.NotNil(t, g.r.names.Get("s2"))
		}},
		{"Describe and Bind of an unknown name pass through for the server to refuse", []step{{
			client: [][]byte{describeStmt("nope"), syncMsg}, wantServer: []string{"D:nope", "S"},
			answers: [][]byte{errorResponse, rfq}, wantClient: []string{"E", "Z"},
		}}, nil},
		{"a rejected Parse is forgotten: name, server set and cache", []step{{
			client: [][]byte{parse("bad", "SELEC 1"), syncMsg}, wantServer: []string{"P:DOORMAN_1", "S"},
			answers: [][]byte{errorResponse, rfq}, wantClient: []string{"E", "Z"},
		}}, func(t *testing.T, g *rwRig) {
			require.Nil(t, g.r.names.Get("bad"))
			require.Zero(t, g.a.Prepared.Len())
			require.Nil(t, g.r.cache.Lookup("SELEC 1", nil, ""))
		}},
		{"after an error the messages up to Sync are skipped by the server, and by the queue", []step{{
			client:     [][]byte{parse("bad", "SELEC 1"), bind("bad"), execute, syncMsg},
			wantServer: []string{"P:DOORMAN_1", "B:DOORMAN_1", "E", "S"},
			answers:    [][]byte{errorResponse, rfq}, wantClient: []string{"E", "Z"},
		}, {
			client: [][]byte{parse("ok", "SELECT 2"), syncMsg}, wantServer: []string{"P:DOORMAN_2", "S"},
			answers: [][]byte{parseComplete, rfq}, wantClient: []string{"1", "Z"},
		}}, nil},
		{"SQL DEALLOCATE of a protocol statement names the server's statement", []step{
			{client: [][]byte{parse("s1", "SELECT 1"), syncMsg}, wantServer: []string{"P:DOORMAN_1", "S"},
				answers: [][]byte{parseComplete, rfq}, wantClient: []string{"1", "Z"}},
			{client: [][]byte{protocol.Query{String: "DEALLOCATE s1"}.Encode(nil)}, wantServer: []string{"Q"},
				answers: [][]byte{protocol.CommandComplete{Tag: "DEALLOCATE"}.Encode(nil), rfq}, wantClient: []string{"C", "Z"}},
		}, func(t *testing.T, g *rwRig) {
			require.Nil(t, g.r.names.Get("s1"))
			require.Zero(t, g.a.Prepared.Len())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRWRig()
			for i, s := range tt.steps {
				srv := g.a
				if s.second {
					srv = g.b
				}
				require.Equal(t, s.wantServer, g.send(srv, s.client...), "step %d: what the server receives", i)
				require.Equal(t, s.wantClient, g.answer(srv, s.answers...), "step %d: what the client sees", i)
				require.Nil(t, g.r.head(), "step %d: every request answered", i)
				g.r.detach()
			}
			if tt.check != nil {
				tt.check(t, g)
			}
		})
	}
}

// TestRewriterNilPassesThrough: without prepared statement support the
// bytes go through untouched and nothing is hidden.
func TestRewriterNilPassesThrough(t *testing.T) {
	var r *rewriter
	in := parse("s1", "SELECT 1")
	require.Equal(t, in, r.Client(nil, protocol.Frame(in), nil))
	require.False(t, r.Server(nil, protocol.MsgParseComplete, nil))
	require.False(t, r.fakesDue())
	require.Equal(t, []byte("x"), r.emitFakes([]byte("x")))
	r.detach()
}

// TestNoteQuery: the simple queries that clear the client's statement names
// or change the plan context, and some that look alike but do neither.
func TestNoteQuery(t *testing.T) {
	tests := []struct {
		query   string
		cleared bool
		planSet string
	}{
		{query: "DISCARD ALL", cleared: true},
		{query: "  deallocate all;", cleared: true},
		{query: "DEALLOCATE PREPARE ALL", cleared: true},
		{query: "\n\tDiscard All", cleared: true},
		{query: "SET search_path = app", planSet: "SET search_path = app;"},
		{query: "set role reader", planSet: "set role reader;"},
		{query: "RESET ROLE", planSet: "RESET ROLE;"},
		{query: "SET SESSION AUTHORIZATION app", planSet: "SET SESSION AUTHORIZATION app;"},
		{query: "SET application_name = 'x'"},
		{query: "SELECT 'DISCARD ALL'"},
		{query: "DEALLOCATE p1"},
		{query: "discard plans"},
		{query: ""},
		{query: "   "},
		{query: "x"},
		{query: "discard all\x00\x00", cleared: true},
		{query: "\f\vSET role x \r\n", planSet: "SET role x;"},
		{query: "SET\tsearch_path = app"}, // "SET " with a space only, as before
		{query: "\u00a0DISCARD ALL"},      // not white space to PostgreSQL either
		{query: "\u017fET role x"},        // ſ folds to s in Unicode, not in SQL
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			g := newRWRig()
			g.r.names.Put("s1", &prepared.Statement{})
			g.r.noteQuery(append([]byte(tt.query), 0))
			require.Equal(t, tt.cleared, g.r.names.Len() == 0, "names cleared")
			require.Equal(t, tt.planSet, g.r.planSet)
		})
	}
}

// TestHasPrefixFold: ASCII letters match in either case, every other byte
// only itself.
func TestHasPrefixFold(t *testing.T) {
	for _, tc := range []struct {
		b, p string
		want bool
	}{
		{"SET x", "SET ", true},
		{"set x", "SET ", true},
		{"sEt x", "SET ", true},
		{"SET", "SET ", false},
		{"SET\tx", "SET ", false},
		{"SET\x00", "SET ", false},
		{"\u017fET x", "SET ", false},
		{"@ET x", "`ET ", false},
		{"sET x", "set ", true},
		{"", "", true},
	} {
		require.Equal(t, tc.want, hasPrefixFold([]byte(tc.b), tc.p), "%q %q", tc.b, tc.p)
	}
}

// TestMayDeallocate: leading whitespace of any of the four kinds is
// skipped, the keyword matches in any case, and nothing shorter or other
// matches.
func TestMayDeallocate(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"DEALLOCATE a", true},
		{"deallocate ALL", true},
		{" \t\r\n DeAlLoCaTe x", true},
		{"DEALLOCATE", true},
		{"", false},
		{"   ", false},
		{"DEALLOC", false},
		{"select 1", false},
		{"/* c */ DEALLOCATE a", false}, // comments are not skipped
		{"\vDEALLOCATE a", false},       // nor other white space
	} {
		require.Equal(t, tc.want, mayDeallocate([]byte(tc.q)), "%q", tc.q)
	}
}
