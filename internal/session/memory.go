package session

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/memlimit"
	"github.com/doorman-go/doorman/internal/protocol"
)

// clientFlushThreshold bounds the bytes serverLoop gathers for the client
// before it writes them: results are forwarded as they come, so a session
// holds O(threshold) whatever the size of its result, and a client that
// does not read blocks serverLoop's write, which stops its reads, so
// PostgreSQL feels the backpressure through TCP. A frame at least this
// large is written on its own without being copied.
const clientFlushThreshold = 32 << 10

// grownSize is what a Reader's buffer counts against max_memory_usage: the
// bytes of a buffer grown beyond the fixed per-connection size, 0 for the
// fixed one.
func grownSize(rd *protocol.Reader) int64 {
	if n := rd.BufferSize(); n > protocol.DefaultBufferSize {
		return int64(n)
	}
	return 0
}

// reserveFor asks the budget for the buffer growth that reading a frame of
// frameLen bytes whole would cause. It reports false when the budget cannot
// cover it.
func reserveFor(acct *memlimit.Account, rd *protocol.Reader, frameLen int) bool {
	if frameLen <= protocol.DefaultBufferSize || frameLen <= rd.BufferSize() {
		return true
	}
	return acct.Grow(int64(rd.GrowthFor(frameLen)))
}

// memoryRefused counts and logs (at most once a second for the process) a
// message that did not fit max_memory_usage. side is "client" or "server",
// action what happened to the message.
func (s *Session) memoryRefused(side, action string, frameLen int) {
	if s.env.Metrics != nil && side == "client" {
		s.env.Metrics.ClientError("max_memory_usage")
	}
	b := s.env.Memory
	if b == nil {
		return
	}
	if suppressed, ok := b.LogDue(time.Now()); ok {
		s.logger().Warn("max_memory_usage reached", zap.String("side", side), zap.String("action", action),
			zap.Int("message_bytes", frameLen), zap.Int64("used_bytes", b.Used()), zap.Int64("limit_bytes", b.Limit()),
			zap.Uint64("refusals_not_logged", suppressed))
	}
}

// refuseRequest answers a new request (the client holds no server) whose
// message does not fit max_memory_usage: the message is read and dropped,
// the client gets ERROR 53200, then ReadyForQuery for a simple Query or
// FunctionCall; after an extended-protocol message everything up to Sync is
// skipped, as PostgreSQL does after an error.
func (s *Session) refuseRequest(typ byte, frameLen int) error {
	s.memoryRefused("client", "request refused", frameLen)
	if err := s.discardFrame(frameLen); err != nil {
		return s.clientReadError(err)
	}
	b := protocol.AppendError(nil, "ERROR", "53200", fmt.Sprintf(
		"out of memory: pg_doorman's max_memory_usage (%d bytes) is in use by other requests; retry later", s.env.Memory.Limit()))
	switch typ {
	case protocol.MsgQuery, protocol.MsgFunctionCall:
		b = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(b)
	default:
		s.skipToSync = true
	}
	return s.Write(b)
}

// skipMessage drops a message sent after a refused extended-protocol
// message; Sync ends the skipping with ReadyForQuery.
func (s *Session) skipMessage(typ byte, frameLen int) error {
	if err := s.discardFrame(frameLen); err != nil {
		return s.clientReadError(err)
	}
	if typ != protocol.MsgSync {
		return nil
	}
	s.skipToSync = false
	return s.Write(protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(nil))
}
