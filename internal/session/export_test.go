package session

// LeftCheckAfter is leftCheckAfter for the tests of package session_test.
const LeftCheckAfter = leftCheckAfter

// ParkedDeep reports whether the session has been parked deep at least once.
func (s *Session) ParkedDeep() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parkedDeep
}

// InCore reports whether the transaction core owns the session now.
func (s *Session) InCore() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.coreLocked() != nil
}
