package session

import (
	"testing"
	"unsafe"
)

// Every idle client keeps one Session, so its size class is a good part of
// what an idle client costs (docs/benchmarks.md). 384 bytes is a Go size
// class: one field more than fits moves every session to the next (416).
// A field only the client loop needs belongs in clientRead, one only a
// TLS client needs in tlsState.
func TestSessionSize(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 384 {
		t.Fatalf("Session is %d bytes, more than the 384-byte size class", n)
	}
}
