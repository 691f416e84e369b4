package protocol

import "encoding/binary"

// Splitter cuts one direction of a protocol v3 stream (after the startup
// packet) into messages as its bytes arrive, in reads of any size. It is the
// push-style counterpart of Reader, for an event loop that reads many sockets
// into one buffer it shares between them:
//   - a message that lies whole in the bytes given is returned in place,
//     aliasing them, and nothing is copied;
//   - a message that continues beyond them is asked about (Hold): held whole,
//     it is copied into the Splitter's own buffer until it is complete;
//     streamed, it comes out in pieces as its bytes arrive, and the Splitter
//     keeps nothing of it.
//
// So what a Splitter holds is bounded by the longest message its caller
// chose to hold whole, plus a 5-byte header split across two reads. A
// declared length is checked before anything is held for it: below 4 it is
// ErrInvalidLength, above the Splitter's limit a *MessageTooLargeError. The
// stream cannot be followed after either, and every later call returns the
// same error.
//
// A Splitter is owned by one goroutine. The zero value is not usable; use
// NewSplitter.
type Splitter struct {
	maxLen int
	err    error

	hdr  [headerLen]byte // a header split across reads
	hdrN int

	holding bool   // a message held whole is being completed in part
	part    []byte // that message so far, header included
	want    int    // its whole length

	rem    int  // streaming: bytes of the current message still to come
	sTyp   byte // streaming: its type
	sLen   int  // streaming: its whole length
	sFirst bool // streaming: the next piece is the first
}

// NewSplitter returns a Splitter that accepts messages of at most maxLen
// (body + 4, the length field's value; DefaultMaxMessageLength if <= 0).
func NewSplitter(maxLen int) *Splitter {
	if maxLen <= 0 {
		maxLen = DefaultMaxMessageLength
	}
	return &Splitter{maxLen: max(maxLen, 4)}
}

// PieceKind is what a Piece is.
type PieceKind uint8

const (
	// PieceNone: the bytes given have been taken in; the rest of the message
	// comes with the next read.
	PieceNone PieceKind = iota
	// PieceWhole: Bytes is a whole message (a Frame).
	PieceWhole
	// PieceStream: Bytes is the next part of a streamed message; the first
	// such piece begins with the message's header (all 5 bytes of it).
	PieceStream
)

// Piece is what Next found.
type Piece struct {
	Kind  PieceKind
	Type  byte   // the message's type
	Len   int    // the message's whole length, header included
	Bytes []byte // see PieceKind; valid until the next call on the Splitter
	First bool   // PieceStream: this piece begins the message
	Last  bool   // PieceStream: this piece ends the message
}

// Frame returns a PieceWhole's message.
func (p Piece) Frame() Frame { return Frame(p.Bytes) }

// Hold is asked, at the header of a message that does not lie whole in the
// bytes given, whether to hold it whole (true) or stream it (false). length
// is the message's whole length, header included. A nil Hold holds every
// message whole.
type Hold func(typ byte, length int) bool

// Next returns the next piece of b (the part of the latest read not taken
// yet) and what is left of b after it. It returns PieceNone with nothing
// left when b ended inside a message, and with b empty when b was empty.
func (s *Splitter) Next(b []byte, hold Hold) (Piece, []byte, error) {
	if s.err != nil {
		return Piece{}, b, s.err
	}
	switch {
	case s.rem > 0:
		return s.stream(b)
	case s.holding:
		return s.complete(b)
	}
	if len(b) == 0 {
		return Piece{}, b, nil
	}
	var h []byte
	split := s.hdrN > 0 || len(b) < headerLen
	if split {
		k := copy(s.hdr[s.hdrN:], b)
		s.hdrN += k
		b = b[k:]
		if s.hdrN < headerLen {
			return Piece{}, b, nil
		}
		s.hdrN = 0
		h = s.hdr[:]
	} else {
		h = b[:headerLen]
	}
	typ := h[0]
	l := int(binary.BigEndian.Uint32(h[1:headerLen]))
	switch {
	case l < 4:
		s.err = ErrInvalidLength
		return Piece{}, b, s.err
	case l > s.maxLen:
		s.err = &MessageTooLargeError{Type: typ, Length: l, Max: s.maxLen}
		return Piece{}, b, s.err
	}
	n := 1 + l
	if !split && len(b) >= n {
		return Piece{Kind: PieceWhole, Type: typ, Len: n, Bytes: b[:n:n]}, b[n:], nil
	}
	if n == headerLen {
		// An empty body whose header was split: whole now.
		return Piece{Kind: PieceWhole, Type: typ, Len: n, Bytes: s.hdr[:]}, b, nil
	}
	if hold == nil || hold(typ, n) {
		s.holding, s.want = true, n
		s.part = append(s.part[:0], h...)
		if !split {
			b = b[headerLen:]
		}
		return s.complete(b)
	}
	s.rem, s.sTyp, s.sLen, s.sFirst = n, typ, n, true
	if split {
		// The header is not in b: it is the first piece on its own.
		s.rem -= headerLen
		s.sFirst = false
		return Piece{Kind: PieceStream, Type: typ, Len: n, Bytes: s.hdr[:], First: true}, b, nil
	}
	return s.stream(b)
}

// stream passes the next bytes of a streamed message on.
func (s *Splitter) stream(b []byte) (Piece, []byte, error) {
	if len(b) == 0 {
		return Piece{}, b, nil
	}
	k := min(s.rem, len(b))
	s.rem -= k
	p := Piece{Kind: PieceStream, Type: s.sTyp, Len: s.sLen, Bytes: b[:k:k], First: s.sFirst, Last: s.rem == 0}
	s.sFirst = false
	return p, b[k:], nil
}

// complete adds b's bytes to the message held whole.
func (s *Splitter) complete(b []byte) (Piece, []byte, error) {
	k := min(s.want-len(s.part), len(b))
	s.part = append(s.part, b[:k]...)
	b = b[k:]
	if len(s.part) < s.want {
		return Piece{}, b, nil
	}
	s.holding = false
	f := s.part[:len(s.part):len(s.part)]
	s.part = s.part[:0]
	return Piece{Kind: PieceWhole, Type: f[0], Len: len(f), Bytes: f}, b, nil
}

// Held is how many bytes of the stream the Splitter holds: a split header
// or the part of a message held whole that has arrived.
func (s *Splitter) Held() int {
	if s.holding {
		return len(s.part)
	}
	return s.hdrN
}

// Between reports whether the stream stands between two messages.
func (s *Splitter) Between() bool { return s.hdrN == 0 && !s.holding && s.rem == 0 }

// Grown is the capacity of the buffer the Splitter keeps for messages held
// whole (Release gives it up).
func (s *Splitter) Grown() int { return cap(s.part) }

// Release drops the buffer kept for messages held whole, unless one is
// being completed; an idle connection then costs the Splitter's fields
// only.
func (s *Splitter) Release() {
	if !s.holding {
		s.part = nil
	}
}
