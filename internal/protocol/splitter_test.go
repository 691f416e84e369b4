package protocol

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// splitStream is a stream of messages of assorted sizes, an empty body
// among them.
func splitStream() ([]byte, []Frame) {
	var frames []Frame
	var b []byte
	for _, m := range []interface{ Encode([]byte) []byte }{
		Query{String: "select 1"},
		Sync{},
		Query{String: string(bytes.Repeat([]byte("x"), 300))},
		Parse{Name: "s", Query: "select $1", ParamOIDs: []uint32{23}},
		Sync{},
	} {
		start := len(b)
		b = m.Encode(b)
		frames = append(frames, Frame(b[start:]))
	}
	return b, frames
}

// feed gives the stream to s in reads of chunk bytes and returns the whole
// messages and, for streamed ones, the concatenation of their pieces. It
// checks the piece flags and that the Splitter holds no more than a header
// plus the messages it was asked to hold.
func feed(t *testing.T, s *Splitter, stream []byte, chunk int, hold Hold, maxHeld int) [][]byte {
	t.Helper()
	var out [][]byte
	var cur []byte
	streaming := false
	for len(stream) > 0 {
		k := min(chunk, len(stream))
		b := stream[:k]
		stream = stream[k:]
		for {
			p, rest, err := s.Next(b, hold)
			require.NoError(t, err)
			require.LessOrEqual(t, s.Held(), maxHeld)
			b = rest
			switch p.Kind {
			case PieceNone:
				require.Empty(t, b, "PieceNone leaves nothing of the read")
			case PieceWhole:
				require.False(t, streaming)
				require.Equal(t, p.Len, len(p.Bytes))
				require.Equal(t, p.Type, p.Bytes[0])
				out = append(out, append([]byte(nil), p.Bytes...))
			case PieceStream:
				require.Equal(t, !streaming, p.First, "First marks only the first piece")
				streaming = true
				cur = append(cur, p.Bytes...)
				if p.Last {
					require.Equal(t, p.Len, len(cur))
					out = append(out, cur)
					cur, streaming = nil, false
				}
			}
			if p.Kind == PieceNone || len(b) == 0 {
				break
			}
		}
	}
	require.False(t, streaming, "the stream ended inside a streamed message")
	require.True(t, s.Between())
	return out
}

func TestSplitterEveryReadSize(t *testing.T) {
	stream, frames := splitStream()
	want := make([][]byte, len(frames))
	for i, f := range frames {
		want[i] = f
	}
	longest := 0
	for _, f := range frames {
		longest = max(longest, len(f))
	}
	cases := []struct {
		name    string
		hold    Hold
		maxHeld int
	}{
		{"hold all", nil, longest},
		{"stream all", func(byte, int) bool { return false }, headerLen},
		{"hold small, stream large", func(_ byte, n int) bool { return n <= 64 }, 64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for chunk := 1; chunk <= len(stream); chunk++ {
				s := NewSplitter(0)
				got := feed(t, s, stream, chunk, tc.hold, tc.maxHeld)
				require.Equal(t, want, got, "reads of %d bytes", chunk)
			}
		})
	}
}

func TestSplitterWholeReadIsNotCopied(t *testing.T) {
	stream, frames := splitStream()
	s := NewSplitter(0)
	b := stream
	for i := range frames {
		p, rest, err := s.Next(b, func(byte, int) bool { t.Fatal("Hold asked for a message that lies whole in the read"); return true })
		require.NoError(t, err)
		require.Equal(t, PieceWhole, p.Kind)
		require.Same(t, &b[0], &p.Bytes[0], "message %d is returned in place", i)
		require.Equal(t, len(p.Bytes), cap(p.Bytes), "the caller cannot append into the next message")
		b = rest
	}
	require.Empty(t, b)
	require.Zero(t, s.Grown())
	p, rest, err := s.Next(nil, nil)
	require.NoError(t, err)
	require.Equal(t, PieceNone, p.Kind)
	require.Empty(t, rest)
}

func TestSplitterBadLengths(t *testing.T) {
	cases := []struct {
		name   string
		header []byte
		want   error
	}{
		{"below 4", []byte{'Q', 0, 0, 0, 3}, ErrInvalidLength},
		{"zero", []byte{'Q', 0, 0, 0, 0}, ErrInvalidLength},
		{"above the limit", []byte{'D', 0, 0, 0x10, 1}, ErrMessageTooLarge},
		{"negative as int32", []byte{'D', 0xff, 0xff, 0xff, 0xff}, ErrMessageTooLarge},
	}
	for _, tc := range cases {
		for _, split := range []bool{false, true} {
			s := NewSplitter(4096)
			var err error
			if split {
				_, _, err = s.Next(tc.header[:2], nil)
				require.NoError(t, err)
				_, _, err = s.Next(append(tc.header[2:], 1, 2, 3), nil)
			} else {
				_, _, err = s.Next(append(tc.header, 1, 2, 3), nil)
			}
			require.ErrorIs(t, err, tc.want, "%s, split %v", tc.name, split)
			var tl *MessageTooLargeError
			if errors.As(err, &tl) {
				require.Equal(t, tc.header[0], tl.Type)
				require.Equal(t, 4096, tl.Max)
			}
			require.Zero(t, s.Held(), "nothing is held for a refused length")
			_, _, again := s.Next(Sync{}.Encode(nil), nil)
			require.ErrorIs(t, again, tc.want, "the error sticks")
		}
	}
}

func TestSplitterHoldSeesLength(t *testing.T) {
	big := Query{String: string(bytes.Repeat([]byte("y"), 1000))}.Encode(nil)
	s := NewSplitter(0)
	var askedType byte
	var askedLen int
	p, rest, err := s.Next(big[:100], func(typ byte, n int) bool { askedType, askedLen = typ, n; return false })
	require.NoError(t, err)
	require.Equal(t, byte(MsgQuery), askedType)
	require.Equal(t, len(big), askedLen)
	require.Equal(t, PieceStream, p.Kind)
	require.True(t, p.First)
	require.False(t, p.Last)
	require.Equal(t, big[:100], p.Bytes)
	require.Empty(t, rest)
	require.Zero(t, s.Held(), "a streamed message is not held")
	require.False(t, s.Between())
}

func TestSplitterReleaseKeepsAMessageInProgress(t *testing.T) {
	msg := Query{String: "select 42"}.Encode(nil)
	s := NewSplitter(0)
	_, _, err := s.Next(msg[:7], nil)
	require.NoError(t, err)
	s.Release()
	p, _, err := s.Next(msg[7:], nil)
	require.NoError(t, err)
	require.Equal(t, PieceWhole, p.Kind)
	require.Equal(t, msg, p.Bytes)
	s.Release()
	require.Zero(t, s.Grown())
}

// FuzzSplitter feeds arbitrary bytes in reads of arbitrary sizes, holding
// messages up to a size taken from the input, and checks the result against
// Reader over the same bytes: the same messages in the same order, then the
// same kind of error or a clean end.
func FuzzSplitter(f *testing.F) {
	stream, _ := splitStream()
	f.Add(stream, uint16(7), uint16(64))
	f.Add(stream, uint16(1), uint16(0))
	f.Add([]byte{'Q', 0, 0, 0, 3}, uint16(2), uint16(10))
	f.Add([]byte{'D', 0x7f, 0xff, 0xff, 0xff, 1, 2}, uint16(3), uint16(10))
	f.Fuzz(func(t *testing.T, data []byte, chunk, holdMax uint16) {
		const maxLen = 1 << 16
		var want [][]byte
		rd := NewReader(bytes.NewReader(data), 64, maxLen)
		var wantErr error
		for {
			fr, err := rd.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					wantErr = err
				}
				break
			}
			want = append(want, append([]byte(nil), fr...))
		}
		size := int(chunk%512) + 1
		hold := func(_ byte, n int) bool { return n <= int(holdMax) }
		s := NewSplitter(maxLen)
		var got [][]byte
		var cur []byte
		var gotErr error
		rest := data
	reads:
		for len(rest) > 0 {
			b := rest[:min(size, len(rest))]
			rest = rest[len(b):]
			for len(b) > 0 {
				p, left, err := s.Next(b, hold)
				if err != nil {
					gotErr = err
					break reads
				}
				if s.Held() > max(int(holdMax), headerLen) {
					t.Fatalf("held %d bytes, hold limit %d", s.Held(), holdMax)
				}
				b = left
				switch p.Kind {
				case PieceWhole:
					got = append(got, append([]byte(nil), p.Bytes...))
				case PieceStream:
					cur = append(cur, p.Bytes...)
					if p.Last {
						got = append(got, cur)
						cur = nil
					}
				}
			}
		}
		require.Equal(t, want, got)
		switch {
		case wantErr == nil:
			require.NoError(t, gotErr)
		case errors.Is(wantErr, ErrMessageTooLarge):
			require.ErrorIs(t, gotErr, ErrMessageTooLarge)
		default:
			require.ErrorIs(t, gotErr, ErrInvalidLength)
		}
	})
}

func TestSplitterAllocations(t *testing.T) {
	stream, _ := splitStream()
	s := NewSplitter(0)
	// Warm the buffer for messages held whole (reads of 7 bytes split most
	// messages).
	feed(t, s, stream, 7, nil, 1<<20)
	cases := []struct {
		name  string
		chunk int
	}{
		{"whole reads, in place", len(stream)},
		{"split reads, held whole", 7},
	}
	for _, tc := range cases {
		allocs := testing.AllocsPerRun(100, func() {
			rest := stream
			for len(rest) > 0 {
				b := rest[:min(tc.chunk, len(rest))]
				rest = rest[len(b):]
				for len(b) > 0 {
					p, left, err := s.Next(b, nil)
					if err != nil || p.Kind == PieceNone && len(left) > 0 {
						t.Fatal("unexpected piece")
					}
					b = left
				}
			}
		})
		require.Zero(t, allocs, tc.name)
	}
}

func BenchmarkSplitter(b *testing.B) {
	// An extended-protocol request as pgbench -M extended sends it, in one
	// read: Parse, Bind, Describe, Execute, Sync.
	var req []byte
	req = Parse{Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1"}.Encode(req)
	req = Bind{Params: [][]byte{[]byte("42")}}.Encode(req)
	req = Describe{ObjectType: ObjectPortal}.Encode(req)
	req = Execute{}.Encode(req)
	req = Sync{}.Encode(req)
	s := NewSplitter(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		rest := req
		for len(rest) > 0 {
			_, rest, _ = s.Next(rest, nil)
		}
	}
}
