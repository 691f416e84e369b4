package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// sampleStream is a typical query cycle as a server sends it.
func sampleStream(rows int, value []byte) []byte {
	b := RowDescription{Fields: []FieldDescription{
		{Name: "id", TypeOID: 23, TypeSize: 4, TypeModifier: -1},
		{Name: "name", TypeOID: 25, TypeSize: -1, TypeModifier: -1},
	}}.Encode(nil)
	for range rows {
		b = DataRow{Values: [][]byte{[]byte("12345"), value}}.Encode(b)
	}
	b = CommandComplete{Tag: "SELECT 1"}.Encode(b)
	return ReadyForQuery{TxStatus: TxIdle}.Encode(b)
}

// splitFrames cuts a well-formed stream into frames without using Reader.
func splitFrames(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := 1 + int(uint32(b[1])<<24|uint32(b[2])<<16|uint32(b[3])<<8|uint32(b[4]))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func TestReaderNext(t *testing.T) {
	t.Parallel()
	stream := sampleStream(20, bytes.Repeat([]byte("x"), 300))
	stream = CopyData{Data: bytes.Repeat([]byte("y"), 20000)}.Encode(stream) // larger than the buffer
	stream = Sync{}.Encode(stream)                                           // empty body
	want := splitFrames(stream)
	readers := map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"data+EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
	}
	for name, mk := range readers {
		for _, bufSize := range []int{1, 16, 0} {
			r := NewReader(mk(), bufSize, 1<<20)
			for i, w := range want {
				f, err := r.Next()
				require.NoError(t, err, "%s/%d frame %d", name, bufSize, i)
				require.Equal(t, w, []byte(f), "%s/%d frame %d", name, bufSize, i)
			}
			_, err := r.Next()
			require.ErrorIs(t, err, io.EOF, "%s/%d", name, bufSize)
			require.Zero(t, r.Buffered())
		}
	}
}

func TestReaderLengthErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		input  []byte
		maxLen int
		want   error
	}{
		{"declared length 3", []byte{'Q', 0, 0, 0, 3}, 100, ErrInvalidLength},
		{"declared length 0", []byte{'Q', 0, 0, 0, 0}, 100, ErrInvalidLength},
		{"over max", []byte{'Q', 0, 0, 0, 101}, 100, ErrMessageTooLarge},
		{"over default max", []byte{'D', 0x40, 0, 0, 0}, 0, ErrMessageTooLarge},
		{"eof in header", []byte{'Q', 0, 0}, 100, io.ErrUnexpectedEOF},
		{"eof in body", []byte{'Q', 0, 0, 0, 9, 'a'}, 100, io.ErrUnexpectedEOF},
		{"clean eof", nil, 100, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tc.input), 16, tc.maxLen)
			_, err := r.Next()
			require.ErrorIs(t, err, tc.want)
			_, err = r.Next()
			require.ErrorIs(t, err, tc.want, "the error repeats: the stream cannot resynchronise")
		})
	}
}

// headerOnly yields the given bytes, then fails the test if read again: the Reader must
// reject an oversized message from its header alone.
type headerOnly struct {
	t    *testing.T
	data []byte
}

func (h *headerOnly) Read(p []byte) (int, error) {
	if len(h.data) == 0 {
		h.t.Fatal("reader waited for the body of a message it must reject")
	}
	n := copy(p, h.data)
	h.data = h.data[n:]
	return n, nil
}

func TestReaderRejectsTooLargeBeforeAllocation(t *testing.T) {
	t.Parallel()
	for _, released := range []bool{false, true} {
		r := NewReader(&headerOnly{t: t, data: []byte{'d', 0x10, 0, 0, 0}}, 64, 1<<20)
		if !released {
			r.acquire(0)
		}
		_, err := r.Next()
		var tl *MessageTooLargeError
		require.ErrorAs(t, err, &tl)
		require.Equal(t, MessageTooLargeError{Type: 'd', Length: 0x10000000, Max: 1 << 20}, *tl)
		require.LessOrEqual(t, len(r.buf), 64, "buffer must not grow for a rejected message")

		typ, n, err := r.PeekHeader()
		require.ErrorIs(t, err, ErrMessageTooLarge)
		require.Equal(t, byte('d'), typ)
		require.Equal(t, 0x10000001, n)
	}
}

func TestReaderPeekHeader(t *testing.T) {
	t.Parallel()
	stream := Query{String: "select 1"}.Encode(nil)
	r := NewReader(iotest.OneByteReader(bytes.NewReader(stream)), 0, 0)
	typ, n, err := r.PeekHeader()
	require.NoError(t, err)
	require.Equal(t, MsgQuery, typ)
	require.Equal(t, len(stream), n)
	require.Nil(t, r.buf, "peeking on a fresh reader needs no buffer")
	require.Equal(t, 5, r.Buffered())
	f, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, stream, []byte(f))
}

// chunkRecorder records the size of every Write.
type chunkRecorder struct {
	bytes.Buffer
	maxChunk int
}

func (c *chunkRecorder) Write(p []byte) (int, error) {
	c.maxChunk = max(c.maxChunk, len(p))
	return c.Buffer.Write(p)
}

func TestForwardFrameLarge(t *testing.T) {
	t.Parallel()
	big := make([]byte, 5<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	stream := CopyData{Data: big}.Encode(nil)
	stream = CopyDone{}.Encode(stream)
	for _, name := range []string{"whole", "half"} {
		var src io.Reader = bytes.NewReader(stream)
		if name == "half" {
			src = iotest.HalfReader(src)
		}
		r := NewReader(src, 8192, 64<<20)
		var out chunkRecorder
		n, err := r.ForwardFrame(&out)
		require.NoError(t, err)
		require.Equal(t, int64(len(stream)-5), n)
		require.True(t, bytes.Equal(stream[:len(stream)-5], out.Bytes()), "forwarded bytes differ")
		require.LessOrEqual(t, out.maxChunk, 8192)
		require.Equal(t, 8192, len(r.buf), "ForwardFrame must not grow the buffer")
		f, err := r.Next()
		require.NoError(t, err)
		require.Equal(t, MsgCopyDone, f.Type())
	}
}

func TestForwardFrameMaxLen(t *testing.T) {
	t.Parallel()
	r := NewReader(bytes.NewReader(CopyData{Data: make([]byte, 100)}.Encode(nil)), 16, 50)
	n, err := r.ForwardFrame(io.Discard)
	require.ErrorIs(t, err, ErrMessageTooLarge)
	require.Zero(t, n)
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.after {
		n := w.after
		w.after = 0
		return n, errors.New("connection reset")
	}
	w.after -= len(p)
	return len(p), nil
}

func TestForwardFrameErrorsAreSticky(t *testing.T) {
	t.Parallel()
	stream := CopyData{Data: make([]byte, 100)}.Encode(nil)
	stream = Sync{}.Encode(stream)
	r := NewReader(bytes.NewReader(stream), 16, 0)
	n, err := r.ForwardFrame(&failWriter{after: 20})
	require.EqualError(t, err, "forward message: connection reset")
	require.Equal(t, int64(20), n)
	_, err = r.Next()
	require.EqualError(t, err, "forward message: connection reset", "mid-message: no further frames")

	r.Reset(bytes.NewReader(Sync{}.Encode(nil)))
	f, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, MsgSync, f.Type())

	r = NewReader(bytes.NewReader(stream[:50]), 16, 0)
	_, err = r.ForwardFrame(io.Discard)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// flakyReader fails once after `failAt` bytes, like a read deadline, then continues.
type flakyReader struct {
	data   []byte
	failAt int
	failed bool
}

var errTimeout = errors.New("i/o timeout")

func (f *flakyReader) Read(p []byte) (int, error) {
	if !f.failed && f.failAt == 0 {
		f.failed = true
		return 0, errTimeout
	}
	n := len(p)
	if !f.failed {
		n = min(n, f.failAt)
		f.failAt -= n
	}
	n = copy(p, f.data[:min(n, len(f.data))])
	f.data = f.data[n:]
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func TestReaderRetriesAfterTransientError(t *testing.T) {
	t.Parallel()
	stream := sampleStream(3, []byte("abc"))
	want := splitFrames(stream)
	for failAt := 0; failAt < len(stream); failAt += 7 {
		for _, bufSize := range []int{8, 0} {
			r := NewReader(&flakyReader{data: stream, failAt: failAt}, bufSize, 0)
			if failAt%2 == 1 {
				r.Release()
			}
			var got [][]byte
			sawTimeout := false
			for {
				f, err := r.Next()
				if errors.Is(err, errTimeout) {
					sawTimeout = true
					continue
				}
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				got = append(got, bytes.Clone(f))
			}
			require.True(t, sawTimeout)
			require.Equal(t, want, got, "failAt %d", failAt)
		}
	}
}

func TestReaderReleaseAndShrink(t *testing.T) {
	t.Parallel()
	small := Query{String: "select 1"}.Encode(nil)
	large1 := CopyData{Data: make([]byte, 20_000)}.Encode(nil)
	large2 := CopyData{Data: make([]byte, 30_000)}.Encode(nil)
	stream := bytes.Join([][]byte{small, small, large1, large2, small}, nil)
	r := NewReader(bytes.NewReader(stream), 0, 0)
	require.Nil(t, r.buf, "no buffer before the first read")

	_, err := r.Next()
	require.NoError(t, err)
	require.NotZero(t, r.Buffered(), "read-ahead holds the next message")
	r.Release()
	require.NotNil(t, r.buf, "Release with buffered bytes is a no-op")

	want := [][]byte{small, large1, large2}
	for _, w := range want {
		f, err := r.Next()
		require.NoError(t, err)
		require.Equal(t, w, []byte(f))
	}
	// The second growth doubled the buffer, so the trailing small message was read ahead.
	require.Greater(t, len(r.buf), DefaultBufferSize)
	require.Equal(t, len(small), r.Buffered())

	r.Shrink() // the buffered small message fits a normal buffer: it moves into one
	require.Equal(t, DefaultBufferSize, len(r.buf))
	f, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, small, []byte(f))

	r.Release()
	require.Nil(t, r.buf, "idle reader holds no buffer")
	require.Zero(t, r.Buffered())
	_, err = r.Next()
	require.ErrorIs(t, err, io.EOF)
}

func TestReaderShrink(t *testing.T) {
	t.Parallel()
	l30 := CopyData{Data: make([]byte, 30_000)}.Encode(nil)
	l40 := CopyData{Data: make([]byte, 40_000)}.Encode(nil)
	l5 := CopyData{Data: make([]byte, 5_000)}.Encode(nil)

	r := NewReader(bytes.NewReader(l30), 1024, 0)
	_, err := r.Next()
	require.NoError(t, err)
	require.Greater(t, len(r.buf), 1024)
	r.Shrink()
	require.Nil(t, r.buf, "nothing buffered: the grown buffer is dropped")

	// Buffered bytes larger than a normal buffer keep the big one.
	r.Reset(bytes.NewReader(bytes.Join([][]byte{l30, l40, l5}, nil)))
	for _, w := range [][]byte{l30, l40} {
		f, err := r.Next()
		require.NoError(t, err)
		require.Equal(t, w, []byte(f))
	}
	require.Equal(t, len(l5), r.Buffered())
	size := len(r.buf)
	r.Shrink()
	require.Equal(t, size, len(r.buf))
	f, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, l5, []byte(f))
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	t.Parallel()
	_, err := NewReader(emptyReader{}, 0, 0).Next()
	require.ErrorIs(t, err, io.ErrNoProgress)
}

// repeatReader serves data forever, as a server streaming the same result again and again.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	stream := sampleStream(100, []byte("some text value"))
	frames := len(splitFrames(stream))
	r := NewReader(&repeatReader{data: stream}, 0, 0)
	next := testing.AllocsPerRun(50, func() {
		for range frames {
			f, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Discard.Write(f)
			_ = ReadyForQueryStatus(f)
		}
	})
	require.Zero(t, next, "Next")
	forward := testing.AllocsPerRun(50, func() {
		for range frames {
			if _, err := r.ForwardFrame(io.Discard); err != nil {
				t.Fatal(err)
			}
		}
	})
	require.Zero(t, forward, "ForwardFrame")
	cycle := testing.AllocsPerRun(50, func() {
		for range frames {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		r.Release()
		r.Release()
	})
	require.Zero(t, cycle, "Release then Next reuses pooled buffers")
}

func BenchmarkForwardStream(b *testing.B) {
	stream := sampleStream(100, []byte("some text value"))
	frames := len(splitFrames(stream))
	r := NewReader(&repeatReader{data: stream}, 0, 0)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		for range frames {
			f, err := r.Next()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Discard.Write(f); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkForwardFrameStream(b *testing.B) {
	stream := sampleStream(100, bytes.Repeat([]byte("v"), 2000))
	frames := len(splitFrames(stream))
	r := NewReader(&repeatReader{data: stream}, 0, 0)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		for range frames {
			if _, err := r.ForwardFrame(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestGrowthForPredictsBufferSize(t *testing.T) {
	for _, sizes := range [][]int{{10}, {20000}, {100, 9000, 9100, 30000}, {70000, 10}} {
		var stream []byte
		for _, n := range sizes {
			stream = append(stream, 'd', 0, 0, 0, 0)
			binary.BigEndian.PutUint32(stream[len(stream)-4:], uint32(n+4))
			stream = append(stream, make([]byte, n)...)
		}
		r := NewReader(bytes.NewReader(stream), 0, 0)
		for range sizes {
			_, frameLen, err := r.PeekHeader()
			if err != nil {
				t.Fatal(err)
			}
			want := r.GrowthFor(frameLen)
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			if got := r.BufferSize(); got != want {
				t.Fatalf("sizes %v: frame of %d: GrowthFor said %d, buffer is %d", sizes, frameLen, want, got)
			}
		}
	}
}

// TestReaderPrime: primed bytes are read first, then the source, across
// a message split between the two and one longer than the buffer.
func TestReaderPrime(t *testing.T) {
	big := frame('Q', bytes.Repeat([]byte("x"), 3*DefaultBufferSize))
	tests := []struct {
		name         string
		prime, after []byte
		want         [][]byte
	}{
		{"whole messages primed", append(frame('Q', []byte("a\x00")), frame('S', nil)...), frame('X', nil),
			[][]byte{frame('Q', []byte("a\x00")), frame('S', nil), frame('X', nil)}},
		{"a message split between prime and source", frame('Q', []byte("abc\x00"))[:3], frame('Q', []byte("abc\x00"))[3:],
			[][]byte{frame('Q', []byte("abc\x00"))}},
		{"primed bytes longer than the buffer", big[:2*DefaultBufferSize], big[2*DefaultBufferSize:], [][]byte{big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.after), 0, 0)
			r.Prime(tt.prime)
			require.Equal(t, len(tt.prime), r.Buffered())
			for _, w := range tt.want {
				f, err := r.Next()
				require.NoError(t, err)
				require.Equal(t, w, []byte(f))
			}
			_, err := r.Next()
			require.ErrorIs(t, err, io.EOF)
		})
	}
	r := NewReader(bytes.NewReader(nil), 0, 0)
	r.Prime(nil)
	require.Zero(t, r.Buffered(), "nothing primed")
}

// TestReaderUnread: what a Reader read ahead, handed to a new Reader over
// the same stream with Prime, yields the rest of the stream unchanged:
// whole messages read along, part of one, and a header read while the
// buffer was released.
func TestReaderUnread(t *testing.T) {
	q := frame('Q', []byte("select 1\x00"))
	stream := append(append(frame('p', []byte("secret\x00")), q...), frame('X', nil)...)
	tests := []struct {
		name    string
		chunk   int  // the source's reads return at most this many bytes
		release bool // release after the first message, then peek
		unread  int
	}{
		{"the rest read along", len(stream), false, len(stream) - 12},
		// The first read takes a header (5 bytes), the next one n.
		{"part of the next message", 9, false, 2},
		{"nothing read ahead", 7, false, 0},
		{"a header read while released", 7, true, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &chunkReader{b: stream, n: tt.chunk}
			r := NewReader(src, 0, 0)
			f, err := r.Next()
			require.NoError(t, err)
			require.Equal(t, byte('p'), f.Type())
			if tt.release {
				r.Release()
				_, _, err := r.PeekHeader()
				require.NoError(t, err)
			}
			require.Len(t, r.Unread(), tt.unread)
			require.Equal(t, tt.unread, r.Buffered())
			next := NewReader(src, 0, 0)
			next.Prime(r.Unread())
			f, err = next.Next()
			require.NoError(t, err)
			require.Equal(t, q, []byte(f))
			f, err = next.Next()
			require.NoError(t, err)
			require.Equal(t, byte('X'), f.Type())
			_, err = next.Next()
			require.ErrorIs(t, err, io.EOF)
		})
	}
}

// chunkReader returns b in reads of at most n bytes.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	m := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[m:]
	return m, nil
}

// frame is a message of type typ with body b.
func frame(typ byte, b []byte) []byte {
	f := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(f[1:], uint32(4+len(b)))
	return append(f, b...)
}
