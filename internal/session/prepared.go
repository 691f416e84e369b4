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
	var out []byte
	switch f.Type() {
	case protocol.MsgParse:
		if b := f.Body(); len(b) > 0 && b[0] == 0 {
			return false, nil // unnamed: goes to the server, no need to decode
		}
		var p protocol.Parse
		if p.Decode(f.Body()) != nil || p.Name == "" || s.rw.names.Get(p.Name) != nil {
			return false, nil
		}
		st := s.rw.cache.Lookup(p.Query, p.ParamOIDs, s.rw.planSet)
		hit := st != nil
		if !hit || !st.Verified() {
			if !s.mayDeferParse() {
				return false, nil // rewriteParse counts the hit or miss
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
		out = protocol.ParseComplete{}.Encode(nil)
	case protocol.MsgClose:
		typ, name, err := protocol.ObjectName(f.Body())
		if err != nil || typ != protocol.ObjectStatement || len(name) == 0 {
			return false, nil
		}
		s.rw.names.Delete(string(name))
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
