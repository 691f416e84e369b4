package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
)

// syncedParams are the session parameters kept equal to what the client
// set, on whichever server it lands: application_name always (as PgBouncer
// does), the others with sync_server_parameters.
var syncedParams = [...]string{"client_encoding", "DateStyle", "TimeZone", "standard_conforming_strings", "application_name"}

const (
	appNameParam = len(syncedParams) - 1
	allParams    = 1<<len(syncedParams) - 1
)

// paramSync is the state of the SETs a session puts ahead of its first
// message on a server connection. attach fills it before serverLoop starts;
// from then on serverLoop owns it until it releases the connection, which
// happens after the last reply to those SETs.
type paramSync struct {
	due     [len(syncedParams)]uint8 // syncedParams index of each injected Query, in order
	n, head uint8                    // due[head:n] are still to be answered
	failed  uint8                    // bits of parameters whose SET failed: not retried in this session
	err     *protocol.Notice         // error of the Query being answered
}

// ParamSyncMetrics is implemented by Env.Metrics hooks that count SETs of
// client parameters the server rejected.
type ParamSyncMetrics interface {
	ParamSyncFailed(db, user, param string)
}

// defaultAppName is the application_name of a client that sent none: the
// pool's application_name, else empty. It does not come from the pool's
// ServerParams, which are read from a server connection another client may
// have renamed.
func defaultAppName(client string, set *pooler.Settings) string {
	if client != "" {
		return client
	}
	return set.DB.ApplicationName
}

// attach acquires a server connection for the message the client just
// sent; who reads the server is decided once the messages are written
// (afterFlush). The SETs that bring the connection's
// parameters to the client's go into sbuf, ahead of the client's bytes, so
// that they cost no round trip of their own.
func (s *Session) attach(ctx context.Context, sbuf *[]byte) (*pooler.Conn, error) {
	s.state.Store(StateWaiting)
	s.pool.Stats.ClientsActive.Add(1)
	s.lastWait = waitNone
	c, err := s.pool.AcquireFor(ctx, (*waitHook)(s))
	if err != nil {
		s.pool.Stats.ClientsActive.Add(-1)
		if errors.Is(err, pooler.ErrCanceled) {
			return nil, err // answered by the client loop (answerCanceled)
		}
		return nil, s.acquireFailed(err)
	}
	// Only after a real wait of leftCheckAfter or more (lookAfterWait): a
	// server handed over at once or within the anticipation spin costs
	// nothing, not even a clock read, and a short wait no system call.
	if s.lastWait == waitLong && clientLeft(s.nc, s.raw) {
		// The client gave up while it waited (its connect or statement
		// timeout, a reset): its statement is not run, as PostgreSQL's
		// client_connection_check_interval would cancel it.
		s.pool.Release(c)
		s.pool.Stats.ClientsActive.Add(-1)
		s.pool.Stats.LeftWhileWaiting.Add(1)
		return nil, fmt.Errorf("%w while waiting for a server", errClientGone)
	}
	s.state.Store(StateActive)
	if err := s.syncParams(c.Value, sbuf); err != nil {
		s.pool.Release(c)
		s.pool.Stats.ClientsActive.Add(-1)
		return nil, err
	}
	s.bindServer(c, time.Time{})
	return c, nil
}

// leftCheckAfter is the shortest wait for a server after which attach
// looks whether the client is still there before sending its statement.
// The look is a system call (a peek on the client's socket); under a pool
// at its size nearly every transaction waits a few milliseconds, and a
// client gives up on its own timeouts (connect, statement, context), which
// are longer than this. A client that leaves during a shorter wait has its
// statement run, as PostgreSQL runs a query whose client left before
// client_connection_check_interval comes round.
const leftCheckAfter = 100 * time.Millisecond

// lookAfterWait reports whether a wait for a server (queued: not ended
// within the pool's anticipation spin) lasted long enough for attach to
// look at the client.
func lookAfterWait(queued bool, wait time.Duration) bool {
	return queued && wait >= leftCheckAfter
}

// acquireWait is how an Acquire got its server.
type acquireWait uint8

const (
	waitNone   acquireWait = iota // idle at once, or within the anticipation spin
	waitQueued                    // after a wait in the pool's queue
	waitLong                      // after such a wait of leftCheckAfter or more
)

func classifyWait(queued bool, wait time.Duration) acquireWait {
	switch {
	case lookAfterWait(queued, wait):
		return waitLong
	case queued:
		return waitQueued
	}
	return waitNone
}

// bindServer makes c the session's server for its transaction, which
// starts at at (zero: now).
func (s *Session) bindServer(c *pooler.Conn, at time.Time) {
	s.mu.Lock()
	s.srv = c
	s.xactStart = s.sinceConnected(at)
	if s.rw != nil {
		s.rw.unnamedHere = false
	}
	s.mu.Unlock()
}

// sinceConnected is at (zero: now) on the session's clock, the time
// since ConnectedAt.
func (s *Session) sinceConnected(at time.Time) time.Duration {
	if at.IsZero() {
		return time.Since(s.ConnectedAt)
	}
	return at.Sub(s.ConnectedAt)
}

// syncParams tells the client of another server role (reportRoleParams)
// and puts before sbuf the SETs that bring c to the client's values
// (prependParamSets), unless c was found in sync with the same snapshot of
// the client's values under the same mask and has reported no
// ParameterStatus since: both would then do nothing, and their map lookups
// are saved. Most sessions share one snapshot (trackedRef), so one check of
// a server serves all of them.
func (s *Session) syncParams(c *backend.Conn, sbuf *[]byte) error {
	mask := s.paramMask()
	if s.paramsMarked(c, mask) {
		s.params.n, s.params.head, s.params.err = 0, 0, nil
		return nil
	}
	if err := s.reportRoleParams(c); err != nil {
		return err
	}
	*sbuf = s.prependParamSets(c, *sbuf, mask)
	if s.params.n == 0 {
		c.ParamsMark = backend.ParamsMark{Of: s.tracked.p, Gen: c.ParamsGen, Mask: mask}
	}
	return nil
}

// paramsMarked reports whether c was found in sync with the client's
// snapshot under mask (see syncParams).
func (s *Session) paramsMarked(c *backend.Conn, mask uint8) bool {
	m := c.ParamsMark
	return m.Gen == c.ParamsGen && m.Mask == mask && m.Of == any(s.tracked.p)
}

// paramsInSync reports whether c needs no SETs and no role parameters for
// the client: syncParams would do nothing.
func (s *Session) paramsInSync(c *backend.Conn) bool { return s.paramsMarked(c, s.paramMask()) }

// paramMask is the tracked parameters prependParamSets keeps equal:
// application_name, all of them with sync_server_parameters, less those
// whose SET failed in this session.
func (s *Session) paramMask() uint8 {
	mask := uint8(1 << appNameParam)
	if s.pool.Settings().General.SyncServerParameters {
		mask = allParams
	}
	return mask &^ s.params.failed
}

// prependParamSets puts before b one Query per tracked parameter in mask
// whose value on c differs from the client's. One Query each, not one with
// all the SETs: statements of one Query run in one implicit transaction, so
// a rejected value would undo the others.
func (s *Session) prependParamSets(c *backend.Conn, b []byte, mask uint8) []byte {
	p := &s.params
	p.n, p.head, p.err = 0, 0, nil
	// The client loop's buffer is empty here (a client with bytes for a
	// server has one attached), so the SETs usually go into it directly.
	q, client := b, []byte(nil)
	if len(b) > 0 {
		q, client = nil, b
	}
	for i, k := range syncedParams {
		if mask&(1<<i) == 0 {
			continue
		}
		want, ok := s.tracked.get(i)
		if !ok || c.Params[k] == want {
			continue
		}
		q = protocol.Query{String: "SET " + k + " TO " + quoteLiteral(want)}.Encode(q)
		p.due[p.n] = uint8(i)
		p.n++
	}
	switch {
	case client == nil:
		return q // b with the SETs
	case p.n == 0:
		return b
	}
	return append(q, client...)
}

// quoteLiteral quotes v as an SQL string literal that means v whatever
// standard_conforming_strings is.
func quoteLiteral(v string) string {
	q := "'" + strings.ReplaceAll(v, "'", "''") + "'"
	if strings.Contains(v, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// swallowParamReply reads one server message answering an injected SET
// and keeps it from the client, which already believes its own values.
// serverLoop calls it while params.n > 0.
func (s *Session) swallowParamReply(conn *backend.Conn) error {
	f, err := conn.Reader.Next()
	if err != nil {
		return err
	}
	s.applyParamReply(conn, f)
	return nil
}

// applyParamReply settles what one server message answering an injected
// SET says: it keeps conn.Params true to the server, so that the next
// checkout compares against what the server has, and at the SET's
// ReadyForQuery records its outcome (paramSetDone). Whoever read f keeps
// it from the client.
func (s *Session) applyParamReply(conn *backend.Conn, f protocol.Frame) {
	p := &s.params
	i := p.due[p.head]
	switch f.Type() {
	case protocol.MsgParameterStatus:
		conn.ApplyParameterStatus(f.Body())
	case protocol.MsgErrorResponse:
		if isFatal(f.Body()) {
			conn.Broken = true
		}
		if p.err == nil {
			p.err = &protocol.Notice{}
			_ = p.err.Decode(f.Body())
		}
	case protocol.MsgReadyForQuery:
		conn.TxStatus = protocol.ReadyForQueryStatus(f)
		s.paramSetDone(conn, int(i))
		if p.head++; p.head == p.n {
			p.n, p.head = 0, 0
		}
	}
}

// paramSetDone settles the SET of syncedParams[i] once its Query is
// answered.
func (s *Session) paramSetDone(conn *backend.Conn, i int) {
	k := syncedParams[i]
	p := &s.params
	if p.err == nil {
		// The server's spelling of the value (application_name is cut to
		// 63 bytes, "iso" reads "ISO, MDY") is what the next checkout
		// compares with.
		if v, ok := conn.Params[k]; ok {
			s.tracked.put(i, v)
		}
		return
	}
	p.failed |= 1 << i
	s.logger().Warn("server rejected a client parameter; not set again in this session",
		zap.String("parameter", k), zap.String("value", s.tracked.value(i)),
		zap.String("sqlstate", p.err.Code), zap.String("error", p.err.Message))
	p.err = nil
	if m, ok := s.env.Metrics.(ParamSyncMetrics); ok {
		m.ParamSyncFailed(s.Database, s.User, k)
	}
}

// roleParams are the server parameters that say what kind of server a
// client is on. They are re-sent whenever the backend a client lands on
// reports something else than the client was last told, so that
// target_session_attrs and read-only detection stay truthful after a
// failover, a fallback or a RECONNECT.
var roleParams = [...]string{"in_hot_standby", "default_transaction_read_only"}

func (s *Session) reportRoleParams(c *backend.Conn) error {
	var b []byte
	for j, k := range roleParams {
		v, ok := c.Params[k]
		if cur, _ := s.tracked.get(roleIndex(j)); !ok || cur == v {
			continue
		}
		s.tracked.put(roleIndex(j), v)
		b = protocol.ParameterStatus{Name: k, Value: v}.Encode(b)
	}
	if b == nil {
		return nil
	}
	if err := s.Write(b); err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}
