package session

import (
	"fmt"

	"github.com/doorman-go/doorman/internal/protocol"
)

// rewriting reports whether statement names are rewritten for this client.
func (s *Session) rewriting() bool { return s.rw != nil }

// answerLocally answers, without a server, what needs none while the
// client holds no server connection: the Parse of a statement some server
// already accepted (it is prepared lazily where it is first used), Close
// of a statement, Sync and Flush. Besides saving round trips, this keeps
// drivers that prepare synchronously (libpq's PQprepare, used by pgbench -M
// prepared) from waiting for a server while holding others in their
// transactions on the same thread. It reports whether f was handled.
func (s *Session) answerLocally(f protocol.Frame) (bool, error) {
	out, done := s.localAnswer(f, s.crd.Buffered(), nil)
	if !done || len(out) == 0 {
		return done, nil
	}
	if err := s.Write(out); err != nil {
		return true, fmt.Errorf("%w: %w", errClientGone, err)
	}
	return true, nil
}

// localAnswer appends to out the pooler's own answer to f, when it has
// one (done); after is how many bytes the client sent after f.
func (s *Session) localAnswer(f protocol.Frame, after int, out []byte) (_ []byte, done bool) {
	switch f.Type() {
	case protocol.MsgParse:
		if b := f.Body(); len(b) > 0 && b[0] == 0 {
			return out, false // unnamed: goes to the server, no need to decode
		}
		var p protocol.Parse
		if p.Decode(f.Body()) != nil || p.Name == "" || s.rw.names.Get(p.Name) != nil {
			return out, false
		}
		st := s.rw.cache.Lookup(p.Query, p.ParamOIDs, s.rw.planSet)
		hit := st != nil
		if !hit || !st.Verified() {
			if !s.mayDeferParse(after) {
				return out, false // rewriteParse counts the hit or miss
			}
			s.rw.stats.PreparedDeferred.Add(1)
			st, hit = s.rw.cache.Get(p.Query, p.ParamOIDs, s.rw.planSet)
		}
		if hit {
			s.rw.stats.PreparedHits.Add(1)
		} else {
			s.rw.stats.PreparedMisses.Add(1)
		}
		if n := s.rw.names.Put(p.Name, st); n > 0 {
			s.rw.stats.PreparedClientEvictions.Add(uint64(n))
		}
		return protocol.ParseComplete{}.Encode(out), true
	case protocol.MsgClose:
		typ, name, err := protocol.ObjectName(f.Body())
		if err != nil || typ != protocol.ObjectStatement || len(name) == 0 {
			return out, false
		}
		s.rw.names.Delete(string(name))
		return protocol.CloseComplete{}.Encode(out), true
	case protocol.MsgSync:
		return protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(out), true
	case protocol.MsgFlush:
		return out, true
	}
	return out, false
}

// mayDeferParse reports whether the Parse just read, of a statement no
// server has accepted yet, is answered without a server and prepared where
// it is first used. Only for libpq's synchronous PQprepare (the Parse is
// followed by nothing but one 5-byte message, Sync or Flush) and only when
// waiting for a server could deadlock: no connection is idle and the pool
// cannot open one. A server's error for the statement then comes with its
// first Bind or Describe instead of with the Parse.
func (s *Session) mayDeferParse(after int) bool {
	if after != 5 {
		return false
	}
	conns := s.pool.Conns()
	st := conns.Stats()
	return st.Idle == 0 && (st.Waiting > 0 || st.Total >= conns.Config().MaxSize)
}
