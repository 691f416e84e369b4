package session

import (
	"crypto/rand"
	"encoding/binary"
	"sort"
	"sync"
)

// Registry tracks the live sessions: for cancel requests (by the cancel key
// pg_doorman handed out) and for SHOW CLIENTS.
type Registry struct {
	mu       sync.Mutex
	nextID   uint64
	byKey    map[uint64]*Session
	sessions map[uint64]*Session
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byKey: map[uint64]*Session{}, sessions: map[uint64]*Session{}}
}

func (r *Registry) add(s *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	s.ID = r.nextID
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		k := binary.BigEndian.Uint64(b[:])
		if _, dup := r.byKey[k]; dup || k == 0 {
			continue
		}
		s.cancelPID, s.cancelSecret = uint32(k>>32), uint32(k)
		r.byKey[k] = s
		break
	}
	r.sessions[s.ID] = s
}

// adopt registers a migrated session under the cancel key it brought. It
// reports false, registering it without a key, when the key is taken.
func (r *Registry) adopt(s *Session, pid, secret uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	s.ID = r.nextID
	r.sessions[s.ID] = s
	k := uint64(pid)<<32 | uint64(secret)
	if _, dup := r.byKey[k]; dup || k == 0 {
		return false
	}
	s.cancelPID, s.cancelSecret = pid, secret
	r.byKey[k] = s
	return true
}

func (r *Registry) remove(s *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k := uint64(s.cancelPID)<<32 | uint64(s.cancelSecret); r.byKey[k] == s {
		delete(r.byKey, k)
	}
	delete(r.sessions, s.ID)
}

func (r *Registry) byCancelKey(pid, secret uint32) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byKey[uint64(pid)<<32|uint64(secret)]
}

// List returns the sessions sorted by ID.
func (r *Registry) List() []*Session {
	r.mu.Lock()
	out := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Len is the number of live sessions.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// CloseAll closes every client socket (shutdown after the grace period).
func (r *Registry) CloseAll(code, msg string) {
	for _, s := range r.List() {
		s.Kill(code, msg)
	}
}
