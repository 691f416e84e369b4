package session

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/doorman-go/doorman/internal/backend"
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

func (s *Session) push(r request) {
	if r.fake {
		s.fakes.Add(1)
	}
	s.queue = append(s.queue, r)
}

func (s *Session) head() *request {
	if s.qhead < len(s.queue) {
		return &s.queue[s.qhead]
	}
	return nil
}

func (s *Session) pop() request {
	r := s.queue[s.qhead]
	if r.fake {
		s.fakes.Add(-1)
	}
	s.queue[s.qhead] = request{}
	s.qhead++
	if s.qhead == len(s.queue) {
		s.queue, s.qhead = s.queue[:0], 0
	}
	return r
}

// rewriting reports whether statement names are rewritten for this client.
func (s *Session) rewriting() bool { return s.prep != nil }

// appendLocked appends client frame f, rewritten for the attached server,
// to out and records what the server will answer. Caller holds s.mu.
func (s *Session) appendLocked(srv *backend.Conn, f protocol.Frame, out []byte) []byte {
	if !s.rewriting() {
		return append(out, f...)
	}
	if s.skipping {
		// PostgreSQL reported an error and now ignores everything up to
		// the next Sync: pass these through unchanged, answer nothing,
		// record nothing.
		if f.Type() == protocol.MsgSync {
			s.skipping = false
			s.push(request{kind: protocol.MsgSync})
		}
		return append(out, f...)
	}
	body := f.Body()
	switch f.Type() {
	case protocol.MsgParse:
		return s.rewriteParse(srv, f, out)
	case protocol.MsgBind:
		_, name, err := protocol.BindNames(body)
		if err != nil {
			break
		}
		out = s.ensure(srv, name, out)
		s.push(request{kind: protocol.MsgBind})
		if st := s.lookup(name); st != nil {
			rest := body[bytes.IndexByte(body, 0)+1+len(name)+1:]
			return appendBind(out, body[:bytes.IndexByte(body, 0)], st.Name, rest)
		}
		return append(out, f...)
	case protocol.MsgDescribe:
		typ, name, err := protocol.ObjectName(body)
		if err != nil || typ != protocol.ObjectStatement {
			break
		}
		out = s.ensure(srv, name, out)
		s.push(request{kind: protocol.MsgDescribe})
		if st := s.lookup(name); st != nil {
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
		s.prep.Delete(string(name))
		s.push(request{kind: protocol.MsgClose, fake: true})
		return out
	case protocol.MsgQuery:
		s.noteQuery(body)
		s.unnamedHere = false // a simple Query destroys the unnamed statement
		if !mayDeallocate(body) {
			break // the common case: no copy of the query text
		}
		if q, ok := s.rewriteDeallocate(srv, queryText(body), &out); ok {
			s.push(request{kind: protocol.MsgQuery})
			return protocol.Query{String: q}.Encode(out)
		}
	}
	if k := f.Type(); expectsAnswer(k) {
		s.push(request{kind: k})
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

func (s *Session) lookup(name []byte) *prepared.Statement {
	if len(name) == 0 {
		return nil
	}
	return s.prep.Get(string(name))
}

// rewriteParse handles a client Parse. Named statements go through the
// pool cache; a server that already has the statement is not asked again.
func (s *Session) rewriteParse(srv *backend.Conn, f protocol.Frame, out []byte) []byte {
	if q, ok := unnamedParseQuery(f.Body()); ok && !mayDeallocate(q) {
		// The common unnamed Parse, kept as it came without decoding it.
		s.unnamed = append(s.unnamed[:0], f...)
		s.unnamedHere = true
		s.push(request{kind: protocol.MsgParse})
		return append(out, f...)
	}
	var p protocol.Parse
	if err := p.Decode(f.Body()); err != nil {
		s.push(request{kind: protocol.MsgParse})
		return append(out, f...) // let PostgreSQL report the malformed message
	}
	if p.Name == "" {
		if q, ok := s.rewriteDeallocate(srv, p.Query, &out); ok {
			f = protocol.Frame(protocol.Parse{Query: q, ParamOIDs: p.ParamOIDs}.Encode(nil))
		}
		s.unnamed = append(s.unnamed[:0], f...)
		s.unnamedHere = true
		s.push(request{kind: protocol.MsgParse})
		return append(out, f...)
	}
	if old := s.prep.Get(p.Name); old != nil {
		// PostgreSQL refuses to redefine a name: make the server say so
		// by preparing the old statement's server name again.
		out = s.prepareOn(srv, old, out)
		s.push(request{kind: protocol.MsgParse})
		return protocol.Parse{Name: old.Name, Query: p.Query, ParamOIDs: p.ParamOIDs}.Encode(out)
	}
	st, hit := s.pool.Statements.Get(p.Query, p.ParamOIDs, s.planContext(srv))
	if hit {
		s.pool.Stats.PreparedHits.Add(1)
	} else {
		s.pool.Stats.PreparedMisses.Add(1)
	}
	if n := s.prep.Put(p.Name, st); n > 0 {
		s.pool.Stats.PreparedClientEvictions.Add(uint64(n))
	}
	if srv.Prepared.Has(st) {
		s.push(request{kind: protocol.MsgParse, fake: true, name: p.Name})
		return out
	}
	out = s.evictFor(srv, st, out)
	s.push(request{kind: protocol.MsgParse, stmt: st, name: p.Name})
	return append(out, st.Parse()...)
}

// ensure makes sure the statement a Bind or Describe names exists on srv,
// injecting its Parse (answer swallowed) when it does not.
func (s *Session) ensure(srv *backend.Conn, name []byte, out []byte) []byte {
	if len(name) == 0 {
		if !s.unnamedHere && len(s.unnamed) > 0 {
			s.unnamedHere = true
			s.push(request{kind: protocol.MsgParse, swallow: true})
			s.pool.Stats.PreparedInjected.Add(1)
			return append(out, s.unnamed...)
		}
		return out
	}
	if st := s.prep.Get(string(name)); st != nil {
		return s.prepareOn(srv, st, out)
	}
	return out
}

func (s *Session) prepareOn(srv *backend.Conn, st *prepared.Statement, out []byte) []byte {
	if srv.Prepared.Has(st) {
		return out
	}
	out = s.evictFor(srv, st, out)
	s.push(request{kind: protocol.MsgParse, swallow: true, stmt: st})
	s.pool.Stats.PreparedInjected.Add(1)
	return append(out, st.Parse()...)
}

// evictFor records st as prepared on srv, closing the statement evicted to
// make room.
func (s *Session) evictFor(srv *backend.Conn, st *prepared.Statement, out []byte) []byte {
	for _, old := range srv.Prepared.Add(st) {
		s.push(request{kind: protocol.MsgClose, swallow: true})
		s.pool.Stats.PreparedServerEvictions.Add(1)
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
func (s *Session) planContext(srv *backend.Conn) string {
	if s.planSet == "" && srv.Params["session_authorization"] == s.User && srv.Params["default_transaction_read_only"] != "on" {
		return ""
	}
	return s.planSet + "\x00" + srv.Params["session_authorization"] + "\x00" + srv.Params["default_transaction_read_only"]
}

// noteQuery watches simple queries for what the statement maps must follow:
// DEALLOCATE ALL / DISCARD ALL clear the client's names, SET search_path or
// SET ROLE change the plan context.
func (s *Session) noteQuery(body []byte) {
	q := bytes.TrimSpace(bytes.TrimRight(body, "\x00"))
	switch {
	case hasPrefixFold(q, "DEALLOCATE ALL"), hasPrefixFold(q, "DEALLOCATE PREPARE ALL"), hasPrefixFold(q, "DISCARD ALL"):
		s.prep.Clear()
		s.unnamed = s.unnamed[:0]
	case hasPrefixFold(q, "SET ") || hasPrefixFold(q, "RESET "):
		if containsFold(q, "search_path") || containsFold(q, "role") || containsFold(q, "session authorization") {
			s.planSet += string(q) + ";"
		}
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
	return hasPrefixFold(bytes.TrimLeft(q, " \t\r\n"), "DEALLOCATE")
}

func hasPrefixFold(b []byte, p string) bool {
	return len(b) >= len(p) && bytes.EqualFold(b[:len(p)], []byte(p))
}

func containsFold(b []byte, sub string) bool {
	return bytes.Contains(bytes.ToLower(b), []byte(sub))
}

// answerLocked processes one server message against the request queue.
// It reports whether the message must be hidden from the client. Caller
// holds s.mu and emits the fake answers due before and after.
func (s *Session) answerLocked(srv *backend.Conn, typ byte, body []byte) (hide bool) {
	h := s.head()
	if h == nil {
		return false
	}
	switch typ {
	case protocol.MsgParseComplete, protocol.MsgBindComplete, protocol.MsgCloseComplete:
		r := s.pop()
		hide = r.swallow
		if r.stmt != nil && typ == protocol.MsgParseComplete {
			r.stmt.MarkVerified()
		}
	case protocol.MsgRowDescription, protocol.MsgNoData:
		if h.kind == protocol.MsgDescribe {
			s.pop()
		}
	case protocol.MsgCommandComplete, protocol.MsgEmptyQueryResponse, protocol.MsgPortalSuspended:
		if h.kind == protocol.MsgExecute {
			s.pop()
		}
		if typ == protocol.MsgCommandComplete && (bytes.HasPrefix(body, []byte("DEALLOCATE ALL\x00")) || bytes.HasPrefix(body, []byte("DISCARD ALL\x00"))) {
			// Whatever protocol carried it, the client's statements are
			// gone, and so is everything prepared on this server.
			srv.Prepared.Clear()
			s.prep.Clear()
			s.unnamed = s.unnamed[:0]
			s.unnamedHere = false
		}
	case protocol.MsgErrorResponse:
		if h.kind == protocol.MsgQuery || h.kind == protocol.MsgFunctionCall || h.kind == protocol.MsgSync {
			break
		}
		r := s.pop()
		if r.kind == protocol.MsgParse && r.stmt != nil && !r.fake {
			// The server rejected it: never answer a later Parse of it
			// from the cache, and let its memory go.
			s.pool.Statements.Remove(r.stmt)
		}
		s.failed(srv, r)
		// PostgreSQL now skips every message up to the next Sync; if the
		// client has not sent that Sync yet, what it sends until then is
		// skipped too.
		for h := s.head(); h != nil && h.kind != protocol.MsgSync; h = s.head() {
			s.failed(srv, s.pop())
		}
		if s.head() == nil {
			s.skipping = true
		}
	case protocol.MsgReadyForQuery:
		for h := s.head(); h != nil; h = s.head() {
			r := s.pop()
			if r.kind == protocol.MsgSync || r.kind == protocol.MsgQuery || r.kind == protocol.MsgFunctionCall {
				break
			}
			s.failed(srv, r) // unanswered: the server skipped it
		}
	}
	return hide
}

// failed undoes what a request that failed or was skipped would have done.
func (s *Session) failed(srv *backend.Conn, r request) {
	if r.kind != protocol.MsgParse {
		return
	}
	if r.stmt != nil && !r.fake {
		srv.Prepared.Remove(r.stmt)
	}
	if r.name != "" {
		s.prep.Delete(r.name)
	}
	if r.stmt == nil && r.name == "" && !r.fake {
		s.unnamedHere = false
	}
}

// emitFakesLocked appends the answers the pooler owes at the head of the
// queue.
func (s *Session) emitFakesLocked(out []byte) []byte {
	for h := s.head(); h != nil && h.fake; h = s.head() {
		switch s.pop().kind {
		case protocol.MsgParse:
			out = protocol.ParseComplete{}.Encode(out)
		case protocol.MsgClose:
			out = protocol.CloseComplete{}.Encode(out)
		}
	}
	return out
}

// answerLocally answers, without a server, what needs none while the
// client holds no server connection: the Parse of a statement some server
// already accepted (it is prepared lazily where it is first used), Close
// of a statement, Sync and Flush. Besides saving round trips, this keeps
// drivers that prepare synchronously (libpq's PQprepare, used by pgbench -M
// prepared) from waiting for a server while holding others in their
// transactions on the same thread. It reports whether f was handled.
func (s *Session) answerLocally(f protocol.Frame) (bool, error) {
	var out []byte
	switch f.Type() {
	case protocol.MsgParse:
		if b := f.Body(); len(b) > 0 && b[0] == 0 {
			return false, nil // unnamed: goes to the server, no need to decode
		}
		var p protocol.Parse
		if p.Decode(f.Body()) != nil || p.Name == "" || s.prep.Get(p.Name) != nil {
			return false, nil
		}
		st := s.pool.Statements.Lookup(p.Query, p.ParamOIDs, s.planSet)
		hit := st != nil
		if !hit || !st.Verified() {
			if !s.mayDeferParse() {
				return false, nil // rewriteParse counts the hit or miss
			}
			s.pool.Stats.PreparedDeferred.Add(1)
			st, hit = s.pool.Statements.Get(p.Query, p.ParamOIDs, s.planSet)
		}
		if hit {
			s.pool.Stats.PreparedHits.Add(1)
		} else {
			s.pool.Stats.PreparedMisses.Add(1)
		}
		if n := s.prep.Put(p.Name, st); n > 0 {
			s.pool.Stats.PreparedClientEvictions.Add(uint64(n))
		}
		out = protocol.ParseComplete{}.Encode(nil)
	case protocol.MsgClose:
		typ, name, err := protocol.ObjectName(f.Body())
		if err != nil || typ != protocol.ObjectStatement || len(name) == 0 {
			return false, nil
		}
		s.prep.Delete(string(name))
		out = protocol.CloseComplete{}.Encode(nil)
	case protocol.MsgSync:
		out = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(nil)
	case protocol.MsgFlush:
		return true, nil
	default:
		return false, nil
	}
	if err := s.Write(out); err != nil {
		return true, fmt.Errorf("%w: %w", errClientGone, err)
	}
	return true, nil
}

// mayDeferParse reports whether the Parse just read, of a statement no
// server has accepted yet, is answered without a server and prepared where
// it is first used. Only for libpq's synchronous PQprepare (the Parse is
// followed by nothing but one 5-byte message, Sync or Flush) and only when
// waiting for a server could deadlock: no connection is idle and the pool
// cannot open one. A server's error for the statement then comes with its
// first Bind or Describe instead of with the Parse.
func (s *Session) mayDeferParse() bool {
	if s.crd.Buffered() != 5 {
		return false
	}
	conns := s.pool.Conns()
	st := conns.Stats()
	return st.Idle == 0 && (st.Waiting > 0 || st.Total >= conns.Config().MaxSize)
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
func (s *Session) rewriteDeallocate(srv *backend.Conn, query string, out *[]byte) (string, bool) {
	name, ok := deallocateTarget(query)
	if !ok {
		return "", false
	}
	st := s.prep.Get(name)
	if st == nil {
		return "", false
	}
	*out = s.prepareOn(srv, st, *out)
	s.prep.Delete(name)
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
