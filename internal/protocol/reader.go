package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultBufferSize is the Reader buffer size used when NewReader gets 0; it matches
// PostgreSQL's PQ_RECV_BUFFER_SIZE.
const DefaultBufferSize = 8192

// DefaultMaxMessageLength is used when NewReader gets maxLen <= 0: PostgreSQL's
// MaxAllocSize, the largest message a server can ever send.
const DefaultMaxMessageLength = 1<<30 - 1

// maxEmptyReads bounds consecutive (0, nil) reads before giving up, as bufio does.
const maxEmptyReads = 100

// bufPool recycles default-size buffers released by idle Readers. It holds *[]byte so
// Put does not allocate.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, DefaultBufferSize)
	return &b
}}

// Reader splits a stream into Frames. While its buffer is released (see Release) it keeps
// only a 5-byte header array, so an idle connection costs almost nothing.
type Reader struct {
	rd      io.Reader
	buf     []byte  // nil while released; unread bytes are buf[r:w]
	pooled  *[]byte // non-nil when buf came from bufPool
	r, w    int
	hdr     [headerLen]byte // header bytes read while buf is nil
	hdrN    int
	bufSize int
	maxLen  int
	err     error // read error deferred because the bytes read along with it sufficed
	broken  error // set when ForwardFrame stopped mid-message; cleared by Reset
}

// NewReader returns a Reader over r. bufSize is the normal buffer size (DefaultBufferSize if
// 0); maxLen is the maximum accepted message length, body+4 (DefaultMaxMessageLength if
// <= 0). A longer declared length returns a *MessageTooLargeError before any allocation; a
// declared length < 4 returns ErrInvalidLength. No buffer is allocated until needed.
func NewReader(r io.Reader, bufSize, maxLen int) *Reader {
	if bufSize <= 0 {
		bufSize = DefaultBufferSize
	}
	bufSize = max(bufSize, headerLen)
	if maxLen <= 0 {
		maxLen = DefaultMaxMessageLength
	}
	return &Reader{rd: r, bufSize: bufSize, maxLen: max(maxLen, 4)}
}

// Next returns the next complete frame, valid until the next call on r. Messages longer
// than the buffer grow it (up to maxLen); call Shrink to drop an oversized buffer.
// A clean end of stream between messages is io.EOF; inside a message io.ErrUnexpectedEOF.
func (r *Reader) Next() (Frame, error) {
	_, n, err := r.header()
	if err != nil {
		return nil, err
	}
	r.acquire(n)
	if err := r.fill(n); err != nil {
		return nil, err
	}
	return Frame(r.take(n)), nil
}

// take returns the next n buffered bytes (capacity clipped) and moves past
// them; a buffer read to its end starts over at 0.
func (r *Reader) take(n int) []byte {
	b := r.buf[r.r : r.r+n : r.r+n]
	r.r += n
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	return b
}

// PeekHeader makes sure the 5-byte header of the next message is buffered and returns its
// type and total frame length (5+body). Used to decide whether to stream a large message.
// A too-large message returns its type and length together with a *MessageTooLargeError.
func (r *Reader) PeekHeader() (typ byte, frameLen int, err error) {
	return r.header()
}

// ForwardFrame copies the next message (header and body) to w in chunks of at most the
// buffer size, without growing the buffer. For streaming DataRow/CopyData of many MB.
// If it fails after the header, the stream is positioned mid-message and every later call
// returns the same error until Reset.
func (r *Reader) ForwardFrame(w io.Writer) (int64, error) {
	_, n, err := r.header()
	if err != nil {
		return 0, err
	}
	r.acquire(headerLen)
	var written int64
	for remaining := n; remaining > 0; {
		if r.r == r.w {
			r.r, r.w = 0, 0
			if err := r.fill(1); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				r.broken = fmt.Errorf("forward message: %w", err)
				return written, r.broken
			}
		}
		chunk := min(remaining, r.w-r.r)
		m, err := w.Write(r.buf[r.r : r.r+chunk])
		written += int64(m)
		r.r += m
		remaining -= m
		if err == nil && m < chunk {
			err = io.ErrShortWrite
		}
		if err != nil {
			r.broken = fmt.Errorf("forward message: %w", err)
			return written, r.broken
		}
	}
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	return written, nil
}

// Prime puts b in front of what r has not read yet, as if read from its
// source: the bytes an event loop read before it handed the stream to a
// Reader. r must have nothing buffered.
func (r *Reader) Prime(b []byte) {
	if len(b) == 0 {
		return
	}
	if r.Buffered() > 0 {
		panic("protocol: Prime on a Reader with buffered bytes")
	}
	r.acquire(len(b))
	if len(r.buf) < len(b) {
		r.grow(len(b))
	}
	r.r, r.w = 0, copy(r.buf, b)
}

// Unread returns the bytes already read from the underlying reader but
// not yet returned (Buffered of them), valid until the next call on r:
// what a new Reader over the same stream must be primed with.
func (r *Reader) Unread() []byte {
	if r.buf == nil {
		return r.hdr[:r.hdrN]
	}
	return r.buf[r.r:r.w]
}

// Buffered reports how many bytes are already read from the underlying reader but not yet returned.
func (r *Reader) Buffered() int { return r.w - r.r + r.hdrN }

// Release returns the buffer (default-size buffers go to a shared pool) when Buffered()==0,
// so an idle connection holds no buffer; the next call reads just the 5-byte header into a
// small array before re-acquiring one. Release with buffered bytes is a no-op.
func (r *Reader) Release() {
	if r.buf == nil || r.Buffered() != 0 {
		return
	}
	r.dropBuf()
}

// Shrink drops a buffer grown beyond bufSize. With nothing buffered the buffer is released;
// if the buffered bytes fit a normal buffer they move into one; otherwise Shrink is a no-op.
func (r *Reader) Shrink() {
	if r.buf == nil || len(r.buf) <= r.bufSize {
		return
	}
	switch n := r.w - r.r; {
	case n == 0:
		r.dropBuf()
	case n <= r.bufSize:
		old := r.buf[r.r:r.w]
		r.buf, r.pooled = nil, nil
		r.acquire(r.bufSize)
		r.w = copy(r.buf, old)
	}
}

// Reset re-targets the reader to a new io.Reader, dropping buffered bytes and errors.
func (r *Reader) Reset(rd io.Reader) {
	r.rd = rd
	r.r, r.w, r.hdrN = 0, 0, 0
	r.err, r.broken = nil, nil
}

// header makes sure the next header is available and validates its length. While the
// buffer is released it reads into r.hdr only, so a blocked idle reader holds no buffer.
func (r *Reader) header() (typ byte, frameLen int, err error) {
	if r.broken != nil {
		return 0, 0, r.broken
	}
	var h []byte
	if r.buf == nil {
		if err := r.fillHeader(); err != nil {
			return 0, 0, err
		}
		h = r.hdr[:]
	} else {
		if err := r.fill(headerLen); err != nil {
			return 0, 0, err
		}
		h = r.buf[r.r : r.r+headerLen]
	}
	typ = h[0]
	length := binary.BigEndian.Uint32(h[1:])
	switch {
	case length < 4:
		return typ, 0, fmt.Errorf("%w: message %q declares length %d", ErrInvalidLength, typ, length)
	case uint64(length) > uint64(r.maxLen):
		return typ, 1 + int(length), &MessageTooLargeError{Type: typ, Length: int(length), Max: r.maxLen}
	}
	return typ, 1 + int(length), nil
}

// fillHeader reads into r.hdr until it holds a whole header (buffer released).
func (r *Reader) fillHeader() error {
	for empty := 0; r.hdrN < headerLen; {
		if r.err != nil {
			return r.takeErr()
		}
		m, err := r.rd.Read(r.hdr[r.hdrN:])
		r.hdrN += m
		r.err = err
		if empty, err = countEmpty(empty, m, err); err != nil {
			return err
		}
	}
	return nil
}

// fill makes sure at least n unread bytes are in r.buf (r.buf != nil), growing it if needed.
func (r *Reader) fill(n int) error {
	if r.w-r.r >= n {
		return nil
	}
	if n > len(r.buf) {
		r.grow(n)
	} else if r.r+n > len(r.buf) {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	for empty := 0; r.w-r.r < n; {
		if r.err != nil {
			return r.takeErr()
		}
		m, err := r.rd.Read(r.buf[r.w:])
		r.w += m
		r.err = err
		if empty, err = countEmpty(empty, m, err); err != nil {
			return err
		}
	}
	return nil
}

func countEmpty(empty, m int, err error) (int, error) {
	if m > 0 || err != nil {
		return 0, nil
	}
	if empty+1 >= maxEmptyReads {
		return 0, io.ErrNoProgress
	}
	return empty + 1, nil
}

// takeErr returns the deferred read error once, turning EOF inside a message into
// io.ErrUnexpectedEOF.
func (r *Reader) takeErr() error {
	err := r.err
	r.err = nil
	if err == io.EOF && r.Buffered() > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// acquire makes sure r.buf exists, sized for a frame of n bytes, and moves any header
// bytes read while released into it.
func (r *Reader) acquire(n int) {
	if r.buf != nil {
		return
	}
	switch {
	case n > r.bufSize:
		r.buf = make([]byte, n)
	case r.bufSize == DefaultBufferSize:
		r.pooled = bufPool.Get().(*[]byte)
		r.buf = *r.pooled
	default:
		r.buf = make([]byte, r.bufSize)
	}
	r.r, r.w = 0, copy(r.buf, r.hdr[:r.hdrN])
	r.hdrN = 0
}

// grow replaces the buffer with one that holds at least n bytes, doubling to amortise a
// run of growing messages but never beyond the largest acceptable frame.
func (r *Reader) grow(n int) {
	size := max(n, min(2*len(r.buf), 1+r.maxLen))
	nb := make([]byte, size)
	r.w = copy(nb, r.buf[r.r:r.w])
	r.r = 0
	if r.pooled != nil {
		bufPool.Put(r.pooled)
		r.pooled = nil
	}
	r.buf = nb
}

func (r *Reader) dropBuf() {
	if r.pooled != nil {
		bufPool.Put(r.pooled)
	}
	r.buf, r.pooled = nil, nil
	r.r, r.w = 0, 0
}

// BufferSize is the size of the buffer the reader holds now, 0 while released.
func (r *Reader) BufferSize() int { return len(r.buf) }

// GrowthFor reports the buffer size the reader will hold after reading a frame of n bytes
// whole with Next: its current size when the frame fits, else what grow picks.
func (r *Reader) GrowthFor(n int) int {
	switch {
	case r.buf == nil:
		return max(n, r.bufSize)
	case n <= len(r.buf):
		return len(r.buf)
	}
	return max(n, min(2*len(r.buf), 1+r.maxLen))
}

// Released reports whether the reader holds no buffer (see Release).
func (r *Reader) Released() bool { return r.buf == nil }
