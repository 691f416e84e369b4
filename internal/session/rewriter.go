package session

import (
	"bytes"
	"encoding/binary"
	"strings"
	"sync/atomic"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/prepared"
	"github.com/doorman-go/doorman/internal/protocol"
)

// A request is one client message whose answer the server (or the pooler)
// still owes, in the order the client sent them. With statement names
// rewritten and Parses injected or skipped, serverLoop uses this queue to
// know which server replies to hide (swallow) and where to insert replies
// the pooler makes itself (fake), so the client sees exactly what
// PostgreSQL would have sent.
type request struct {
	kind    byte                // the client message type: P, B, D, E, C, S, Q, F
	fake    bool                // the pooler answers (ParseComplete/CloseComplete)
	swallow bool                // injected by the pooler: hide the server's answer
	stmt    *prepared.Statement // Parse: the statement it prepares on the server
	name    string              // Parse: the client name it bound, undone if skipped
}

// rewriter keeps a client's prepared statements working in transaction
// mode, where its transactions run on different server connections: it
// renames the client's statements to the pool cache's server-side names,
// prepares a statement on a server that lacks it (Parse injected, answer
// swallowed), answers a Parse or Close the server need not see, and keeps
// the queue of requests that tells which server answers to hide and
// where to put the pooler's own. Client takes each client message on its
// way to the attached server, Server each server message on its way back.
// The session's mu guards it (the client loop and serverLoop both use it);
// fakes is also read without mu. A nil *rewriter passes everything through.
type rewriter struct {
	names *prepared.ClientMap // the client's statement names
	cache *prepared.Cache     // the pool's statements
	stats *pooler.Stats       // the pool's counters
	user  string              // the client's user, part of the plan context

	queue []request
	qhead int
	// unnamed is the client's last unnamed Parse, to re-inject; unnamedHere
	// says the attached server holds it because it was parsed there during
	// this attachment (between attachments anything may have replaced it).
	unnamed     []byte
	unnamedHere bool
	planSet     string       // SET search_path/role of the current transaction
	skipping    bool         // after a server error: client messages up to Sync are skipped
	fakes       atomic.Int32 // fake answers queued
}

// newRewriter is the rewriter of a client of p, its name cache bounded by
// client_prepared_statements_cache_size of p's settings now.
func newRewriter(p *pooler.Pool, user string) *rewriter {
	size := p.Settings().General.ClientPreparedStatementsCacheSize
	return &rewriter{names: prepared.NewClientMap(size), cache: p.Statements, stats: &p.Stats, user: user}
}

// blank reports whether r holds nothing a new rewriter would not: no
// statement names, no unnamed statement, nothing queued. A parked client
// drops a blank rewriter and gets a new one when it speaks again.
func (r *rewriter) blank() bool {
	return r.names.Len() == 0 && r.unnamed == nil && r.planSet == "" && len(r.queue) == 0 && !r.skipping && r.fakes.Load() == 0
}

// detach forgets what the attachment to a server left: the request queue
// and the error skipping (the connection went back or was lost).
func (r *rewriter) detach() {
	if r == nil {
		return
	}
	for i := range r.queue {
		r.queue[i] = request{}
	}
	r.queue, r.qhead, r.skipping = r.queue[:0], 0, false
	r.fakes.Store(0)
}

// fakesDue reports whether answers of the pooler are queued.
func (r *rewriter) fakesDue() bool { return r != nil && r.fakes.Load() > 0 }

func (r *rewriter) push(q request) {
	if q.fake {
		r.fakes.Add(1)
	}
	r.queue = append(r.queue, q)
}

func (r *rewriter) head() *request {
	if r.qhead < len(r.queue) {
		return &r.queue[r.qhead]
	}
	return nil
}

func (r *rewriter) pop() request {
	q := r.queue[r.qhead]
	if q.fake {
		r.fakes.Add(-1)
	}
	r.queue[r.qhead] = request{}
	r.qhead++
	if r.qhead == len(r.queue) {
		r.queue, r.qhead = r.queue[:0], 0
	}
	return q
}

// Client appends client frame f, rewritten for the attached server, to out
// and records what the server will answer.
func (r *rewriter) Client(srv *backend.Conn, f protocol.Frame, out []byte) []byte {
	if r == nil {
		return append(out, f...)
	}
	if r.skipping {
		// PostgreSQL reported an error and now ignores everything up to
		// the next Sync: pass these through unchanged, answer nothing,
		// record nothing.
		if f.Type() == protocol.MsgSync {
			r.skipping = false
			r.push(request{kind: protocol.MsgSync})
		}
		return append(out, f...)
	}
	body := f.Body()
	switch f.Type() {
	case protocol.MsgParse:
		return r.rewriteParse(srv, f, out)
	case protocol.MsgBind:
		_, name, err := protocol.BindNames(body)
		if err != nil {
			break
		}
		out = r.ensure(srv, name, out)
		r.push(request{kind: protocol.MsgBind})
		if st := r.lookup(name); st != nil {
			rest := body[bytes.IndexByte(body, 0)+1+len(name)+1:]
			return appendBind(out, body[:bytes.IndexByte(body, 0)], st.Name, rest)
		}
		return append(out, f...)
	case protocol.MsgDescribe:
		typ, name, err := protocol.ObjectName(body)
		if err != nil || typ != protocol.ObjectStatement {
			break
		}
		out = r.ensure(srv, name, out)
		r.push(request{kind: protocol.MsgDescribe})
		if st := r.lookup(name); st != nil {
			return protocol.Describe{ObjectType: protocol.ObjectStatement, Name: st.Name}.Encode(out)
		}
		return append(out, f...)
	case protocol.MsgClose:
		typ, name, err := protocol.ObjectName(body)
		if err != nil || typ != protocol.ObjectStatement || len(name) == 0 {
			break
		}
		// The statement may be shared with other clients: forget the
		// client's name only, and answer CloseComplete ourselves.
		r.names.Delete(string(name))
		r.push(request{kind: protocol.MsgClose, fake: true})
		return out
	case protocol.MsgQuery:
		r.noteQuery(body)
		r.unnamedHere = false // a simple Query destroys the unnamed statement
		if !mayDeallocate(body) {
			break // the common case: no copy of the query text
		}
		if q, ok := r.rewriteDeallocate(srv, queryText(body), &out); ok {
			r.push(request{kind: protocol.MsgQuery})
			return protocol.Query{String: q}.Encode(out)
		}
	}
	if k := f.Type(); expectsAnswer(k) {
		r.push(request{kind: k})
	}
	return append(out, f...)
}

func expectsAnswer(k byte) bool {
	switch k {
	case protocol.MsgParse, protocol.MsgBind, protocol.MsgDescribe, protocol.MsgExecute,
		protocol.MsgClose, protocol.MsgSync, protocol.MsgQuery, protocol.MsgFunctionCall:
		return true
	}
	return false
}

func (r *rewriter) lookup(name []byte) *prepared.Statement {
	if len(name) == 0 {
		return nil
	}
	return r.names.Get(string(name))
}

// rewriteParse handles a client Parse. Named statements go through the
// pool cache; a server that already has the statement is not asked again.
func (r *rewriter) rewriteParse(srv *backend.Conn, f protocol.Frame, out []byte) []byte {
	if q, ok := unnamedParseQuery(f.Body()); ok && !mayDeallocate(q) {
		// The common unnamed Parse, kept as it came without decoding it.
		r.unnamed = append(r.unnamed[:0], f...)
		r.unnamedHere = true
		r.push(request{kind: protocol.MsgParse})
		return append(out, f...)
	}
	var p protocol.Parse
	if err := p.Decode(f.Body()); err != nil {
		r.push(request{kind: protocol.MsgParse})
		return append(out, f...) // let PostgreSQL report the malformed message
	}
	if p.Name == "" {
		if q, ok := r.rewriteDeallocate(srv, p.Query, &out); ok {
			f = protocol.Frame(protocol.Parse{Query: q, ParamOIDs: p.ParamOIDs}.Encode(nil))
		}
		r.unnamed = append(r.unnamed[:0], f...)
		r.unnamedHere = true
		r.push(request{kind: protocol.MsgParse})
		return append(out, f...)
	}
	if old := r.names.Get(p.Name); old != nil {
		// PostgreSQL refuses to redefine a name: make the server say so
		// by preparing the old statement's server name again.
		out = r.prepareOn(srv, old, out)
		r.push(request{kind: protocol.MsgParse})
		return protocol.Parse{Name: old.Name, Query: p.Query, ParamOIDs: p.ParamOIDs}.Encode(out)
	}
	st, hit := r.cache.Get(p.Query, p.ParamOIDs, r.planContext(srv))
	if hit {
		r.stats.PreparedHits.Add(1)
	} else {
		r.stats.PreparedMisses.Add(1)
	}
	if n := r.names.Put(p.Name, st); n > 0 {
		r.stats.PreparedClientEvictions.Add(uint64(n))
	}
	if srv.Prepared.Has(st) {
		r.push(request{kind: protocol.MsgParse, fake: true, name: p.Name})
		return out
	}
	out = r.evictFor(srv, st, out)
	r.push(request{kind: protocol.MsgParse, stmt: st, name: p.Name})
	return append(out, st.Parse()...)
}

// ensure makes sure the statement a Bind or Describe names exists on srv,
// injecting its Parse (answer swallowed) when it does not.
func (r *rewriter) ensure(srv *backend.Conn, name []byte, out []byte) []byte {
	if len(name) == 0 {
		if !r.unnamedHere && len(r.unnamed) > 0 {
			r.unnamedHere = true
			r.push(request{kind: protocol.MsgParse, swallow: true})
			r.stats.PreparedInjected.Add(1)
			return append(out, r.unnamed...)
		}
		return out
	}
	if st := r.names.Get(string(name)); st != nil {
		return r.prepareOn(srv, st, out)
	}
	return out
}

func (r *rewriter) prepareOn(srv *backend.Conn, st *prepared.Statement, out []byte) []byte {
	if srv.Prepared.Has(st) {
		return out
	}
	out = r.evictFor(srv, st, out)
	r.push(request{kind: protocol.MsgParse, swallow: true, stmt: st})
	r.stats.PreparedInjected.Add(1)
	return append(out, st.Parse()...)
}

// evictFor records st as prepared on srv, closing the statement evicted to
// make room.
func (r *rewriter) evictFor(srv *backend.Conn, st *prepared.Statement, out []byte) []byte {
	for _, old := range srv.Prepared.Add(st) {
		r.push(request{kind: protocol.MsgClose, swallow: true})
		r.stats.PreparedServerEvictions.Add(1)
		out = protocol.Close{ObjectType: protocol.ObjectStatement, Name: old.Name}.Encode(out)
	}
	return out
}

func appendBind(out, portal []byte, stmt string, rest []byte) []byte {
	out = append(out, protocol.MsgBind, 0, 0, 0, 0)
	start := len(out) - 4
	out = append(out, portal...)
	out = append(out, 0)
	out = append(out, stmt...)
	out = append(out, 0)
	out = append(out, rest...)
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start))
	return out
}

// planContext is the part of a session's state that changes what a
// statement means: search_path and role as the client set them in this
// transaction, and the server-reported session user and read-only default.
func (r *rewriter) planContext(srv *backend.Conn) string {
	if r.planSet == "" && srv.Params["session_authorization"] == r.user && srv.Params["default_transaction_read_only"] != "on" {
		return ""
	}
	return r.planSet + "\x00" + srv.Params["session_authorization"] + "\x00" + srv.Params["default_transaction_read_only"]
}

// noteQuery watches simple queries for what the statement maps must follow:
// DEALLOCATE ALL / DISCARD ALL clear the client's names, SET search_path or
// SET ROLE change the plan context.
func (r *rewriter) noteQuery(body []byte) {
	q := trimQuery(body)
	if len(q) == 0 {
		return
	}
	var set bool
	switch q[0] | 0x20 { // by first letter, so that a SELECT costs one compare
	case 'd':
		if hasPrefixFold(q, "DEALLOCATE ALL") || hasPrefixFold(q, "DEALLOCATE PREPARE ALL") || hasPrefixFold(q, "DISCARD ALL") {
			r.names.Clear()
			r.unnamed = r.unnamed[:0]
		}
		return
	case 's':
		set = hasPrefixFold(q, "SET ")
	case 'r':
		set = hasPrefixFold(q, "RESET ")
	}
	if set && (containsFold(q, "search_path") || containsFold(q, "role") || containsFold(q, "session authorization")) {
		r.planSet += string(q) + ";"
	}
}

// unnamedParseQuery returns the query text of a well-formed Parse body of
// the unnamed statement (empty name, query, parameter type count and that
// many OIDs), without copying it.
func unnamedParseQuery(body []byte) ([]byte, bool) {
	if len(body) < 1 || body[0] != 0 {
		return nil, false
	}
	i := bytes.IndexByte(body[1:], 0)
	if i < 0 {
		return nil, false
	}
	q, rest := body[1:1+i], body[2+i:]
	if len(rest) < 2 {
		return nil, false
	}
	n := int(rest[0])<<8 | int(rest[1])
	return q, len(rest) == 2+4*n
}

// mayDeallocate reports whether a query text starts with DEALLOCATE: only
// those go through deallocateTarget, which allocates.
func mayDeallocate(q []byte) bool {
	// A loop, not bytes.TrimLeft: that builds its cutset's table on
	// every call, once per unnamed Parse (0.13 % of a transaction's CPU).
	i := 0
	for i < len(q) && (q[i] == ' ' || q[i] == '\t' || q[i] == '\r' || q[i] == '\n') {
		i++
	}
	return hasPrefixFold(q[i:], "DEALLOCATE")
}

// trimQuery is a simple query's text without its terminating NULs and the
// white space around it. Loops, not bytes.TrimRight and bytes.TrimSpace:
// the cutset table TrimRight builds and the Unicode cases of both cost
// about 0.2 % of a select-only transaction's CPU, once per query
// (docs/benchmarks-passes.md, "Forty-first pass").
func trimQuery(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && isASCIISpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isASCIISpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// isASCIISpace reports whether c is ASCII white space (as bytes.TrimSpace
// has it).
func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// hasPrefixFold reports whether b starts with p, ASCII letters compared
// without case as PostgreSQL folds keywords (bytes.EqualFold also folds
// Unicode, which keywords never need). p is ASCII.
func hasPrefixFold(b []byte, p string) bool {
	if len(b) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c, want := b[i], p[i]
		if 'A' <= want && want <= 'Z' || 'a' <= want && want <= 'z' {
			c, want = c|0x20, want|0x20
		}
		if c != want {
			return false
		}
	}
	return true
}

func containsFold(b []byte, sub string) bool {
	return bytes.Contains(bytes.ToLower(b), []byte(sub))
}

// Server processes one server message against the request queue and
// reports whether it must be hidden from the client. The caller emits the
// fake answers due before and after it (emitFakes).
func (r *rewriter) Server(srv *backend.Conn, typ byte, body []byte) (hide bool) {
	if r == nil {
		return false
	}
	h := r.head()
	if h == nil {
		return false
	}
	switch typ {
	case protocol.MsgParseComplete, protocol.MsgBindComplete, protocol.MsgCloseComplete:
		q := r.pop()
		hide = q.swallow
		if q.stmt != nil && typ == protocol.MsgParseComplete {
			q.stmt.MarkVerified()
		}
	case protocol.MsgRowDescription, protocol.MsgNoData:
		if h.kind == protocol.MsgDescribe {
			r.pop()
		}
	case protocol.MsgCommandComplete, protocol.MsgEmptyQueryResponse, protocol.MsgPortalSuspended:
		if h.kind == protocol.MsgExecute {
			r.pop()
		}
		if typ == protocol.MsgCommandComplete && (bytes.HasPrefix(body, []byte("DEALLOCATE ALL\x00")) || bytes.HasPrefix(body, []byte("DISCARD ALL\x00"))) {
			// Whatever protocol carried it, the client's statements are
			// gone, and so is everything prepared on this server.
			srv.Prepared.Clear()
			r.names.Clear()
			r.unnamed = r.unnamed[:0]
			r.unnamedHere = false
		}
	case protocol.MsgErrorResponse:
		if h.kind == protocol.MsgQuery || h.kind == protocol.MsgFunctionCall || h.kind == protocol.MsgSync {
			break
		}
		q := r.pop()
		if q.kind == protocol.MsgParse && q.stmt != nil && !q.fake {
			// The server rejected it: never answer a later Parse of it
			// from the cache, and let its memory go.
			r.cache.Remove(q.stmt)
		}
		r.failed(srv, q)
		// PostgreSQL now skips every message up to the next Sync; if the
		// client has not sent that Sync yet, what it sends until then is
		// skipped too.
		for h := r.head(); h != nil && h.kind != protocol.MsgSync; h = r.head() {
			r.failed(srv, r.pop())
		}
		if r.head() == nil {
			r.skipping = true
		}
	case protocol.MsgReadyForQuery:
		for h := r.head(); h != nil; h = r.head() {
			q := r.pop()
			if q.kind == protocol.MsgSync || q.kind == protocol.MsgQuery || q.kind == protocol.MsgFunctionCall {
				break
			}
			r.failed(srv, q) // unanswered: the server skipped it
		}
	}
	return hide
}

// failed undoes what a request that failed or was skipped would have done.
func (r *rewriter) failed(srv *backend.Conn, q request) {
	if q.kind != protocol.MsgParse {
		return
	}
	if q.stmt != nil && !q.fake {
		srv.Prepared.Remove(q.stmt)
	}
	if q.name != "" {
		r.names.Delete(q.name)
	}
	if q.stmt == nil && q.name == "" && !q.fake {
		r.unnamedHere = false
	}
}

// emitFakes appends the answers the pooler owes at the head of the
// queue.
func (r *rewriter) emitFakes(out []byte) []byte {
	if r == nil {
		return out
	}
	for h := r.head(); h != nil && h.fake; h = r.head() {
		switch r.pop().kind {
		case protocol.MsgParse:
			out = protocol.ParseComplete{}.Encode(out)
		case protocol.MsgClose:
			out = protocol.CloseComplete{}.Encode(out)
		}
	}
	return out
}

func queryText(body []byte) string {
	if n := len(body); n > 0 && body[n-1] == 0 {
		body = body[:n-1]
	}
	return string(body)
}

// rewriteDeallocate turns SQL "DEALLOCATE [PREPARE] name" for one of the
// client's protocol-level statements into the same command for its server
// name (psycopg 3 deallocates its cached statements this way). The client's
// name is forgotten, and the statement leaves this server's set; other
// clients that share it get it prepared again where they need it. If the
// server does not have the statement, it is prepared first (answer hidden)
// so that the DEALLOCATE succeeds like in PostgreSQL.
func (r *rewriter) rewriteDeallocate(srv *backend.Conn, query string, out *[]byte) (string, bool) {
	name, ok := deallocateTarget(query)
	if !ok {
		return "", false
	}
	st := r.names.Get(name)
	if st == nil {
		return "", false
	}
	*out = r.prepareOn(srv, st, *out)
	r.names.Delete(name)
	srv.Prepared.Remove(st)
	return `DEALLOCATE "` + st.Name + `"`, true
}

// deallocateTarget parses "DEALLOCATE [PREPARE] name[;]": an unquoted name
// folds to lower case, a quoted one is taken as is. ALL is not a target.
func deallocateTarget(q string) (string, bool) {
	f := strings.Fields(strings.TrimRight(strings.TrimSpace(q), "; \t\n"))
	if len(f) < 2 || !strings.EqualFold(f[0], "DEALLOCATE") {
		return "", false
	}
	f = f[1:]
	if strings.EqualFold(f[0], "PREPARE") {
		f = f[1:]
	}
	if len(f) != 1 {
		return "", false
	}
	name := f[0]
	if strings.HasPrefix(name, `"`) && strings.HasSuffix(name, `"`) && len(name) >= 2 {
		return strings.ReplaceAll(name[1:len(name)-1], `""`, `"`), true
	}
	if strings.EqualFold(name, "ALL") {
		return "", false
	}
	return strings.ToLower(name), true
}
