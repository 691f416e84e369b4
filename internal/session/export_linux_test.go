//go:build linux

package session

// CoreSentinelBacks is how many sentinels' posts the transaction core of
// s's daemon has taken (0 without a core).
func (s *Session) CoreSentinelBacks() uint64 {
	if s.env.Core == nil {
		return 0
	}
	return s.env.Core.sentinelBacks.Load()
}

// CoreReadSize is the transaction core's read buffer.
const CoreReadSize = coreReadSize

// BreakCore closes the epoll set under the running transaction core of
// s's daemon, as an epoll_wait that fails would end its loop.
func (s *Session) BreakCore() { _ = s.env.Core.set.Close() }
